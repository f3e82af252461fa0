"""The page a link with a preview shows link-preview fetchers and social crawlers (the crawler list
the clicks use: shortener.clicks.agents): Open Graph ("The Open Graph protocol", https://ogp.me/)
and Twitter card tags ("Cards markup", https://developer.x.com/en/docs/x-for-websites/cards/overview/markup),
every value HTML-escaped. People get the redirect (shortener.links.protection). No AWS calls."""

from html import escape

from shortener.links.model import Preview


def preview_page(preview: Preview, short_url: str) -> str:
    """The preview's HTML page for the link at ``short_url``."""
    tags = [
        ("property", "og:type", "website"),
        ("property", "og:url", short_url),
        ("property", "og:title", preview.title),
        ("name", "twitter:card", "summary_large_image" if preview.image else "summary"),
        ("name", "twitter:title", preview.title),
    ]
    if preview.description:
        tags += [
            ("property", "og:description", preview.description),
            ("name", "twitter:description", preview.description),
            ("name", "description", preview.description),
        ]
    if preview.image:
        tags += [("property", "og:image", preview.image), ("name", "twitter:image", preview.image)]
    meta = "\n".join(f'<meta {kind}="{name}" content="{escape(value)}">' for kind, name, value in tags)
    return (
        '<!doctype html>\n<html lang="en">\n<head><meta charset="utf-8">\n'
        f"<title>{escape(preview.title)}</title>\n{meta}\n</head>\n"
        f"<body><h1>{escape(preview.title)}</h1><p>{escape(preview.description)}</p></body>\n</html>\n"
    )

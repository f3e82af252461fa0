"""QR codes of short URLs, drawn with segno (pure Python, PNG and SVG, maintained).

Made to be printed: error correction level Q (about 25% of the symbol may be lost to wear, a
stain or a logo before it stops reading), raised further when the same symbol size allows it, and
the quiet zone of four modules that ISO/IEC 18004 asks for around the code."""

import io
import zipfile
from collections.abc import Sequence

import segno

from shortener.links.qr_model import QrFormat

ERROR_CORRECTION = "q"
QUIET_ZONE_MODULES = 4
MEDIA_TYPES: dict[QrFormat, str] = {"png": "image/png", "svg": "image/svg+xml"}


def qr_image(text: str, image_format: QrFormat, size: int) -> bytes:
    """The QR code of ``text`` as a PNG or SVG at most ``size`` pixels wide (never below one
    pixel a module), quiet zone included."""
    code = segno.make_qr(text, error=ERROR_CORRECTION, boost_error=True)
    modules, _ = code.symbol_size(scale=1, border=QUIET_ZONE_MODULES)
    scale = max(1, size // modules)
    buffer = io.BytesIO()
    if image_format == "png":
        code.save(buffer, kind="png", scale=scale, border=QUIET_ZONE_MODULES)
    else:
        code.save(buffer, kind="svg", scale=scale, border=QUIET_ZONE_MODULES, xmldecl=False, title=text)
    return buffer.getvalue()


def qr_zip(short_urls: Sequence[tuple[str, str]], image_format: QrFormat, size: int) -> bytes:
    """A ZIP of one QR image a ``(name, short URL)`` pair, ``<name>.<format>``, in the order given."""
    # PNGs are compressed already; SVG text shrinks to a fraction.
    method = zipfile.ZIP_STORED if image_format == "png" else zipfile.ZIP_DEFLATED
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        for name, url in short_urls:
            archive.writestr(f"{name}.{image_format}", qr_image(url, image_format, size))
    return buffer.getvalue()

"""The composition root: builds a container's services from its settings."""

from shortener.dal.links import LinksStore
from shortener.logic.codes import code_generator
from shortener.logic.links import LinkService
from shortener.settings import ApiSettings, PollerSettings


def link_service(settings: ApiSettings | PollerSettings) -> LinkService:
    """A LinkService over the links table that ``settings`` names."""
    redirects = settings if isinstance(settings, ApiSettings) else None
    return LinkService(
        LinksStore(settings.LINKS_TABLE),
        code_generator(settings.CODE_ALPHABET),
        strategy=settings.CODE_STRATEGY,
        find_if_exists=settings.FIND_IF_EXISTS,
        id_block_size=settings.ID_BLOCK_SIZE,
        cache_seconds=redirects.REDIRECT_CACHE_SECONDS if redirects else 0,
        cache_size=redirects.REDIRECT_CACHE_SIZE if redirects else 0,
    )

"""Invariant: a code never points to two URLs and no write overwrites a link, under 32 concurrent
writers (each with its own LinkService, as separate Lambda containers would have)."""

from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from shortener import clock
from shortener.exceptions import CodeTakenError
from shortener.links.codes import code_generator
from shortener.links.domains import ShortUrls
from shortener.links.model import Link, ShortenRequest, ShortenResult
from shortener.links.shortening import LinkService
from shortener.links.store import LinksStore
from shortener.links.urls import UrlPolicy, url_key

pytestmark = pytest.mark.integration

THREADS = 32
POLICY = UrlPolicy(allowed_schemes=frozenset({"http", "https"}), max_length=2048)


def container(table: str, *, find_if_exists: bool = True, block: int = 3) -> LinkService:
    return LinkService(
        LinksStore(table), code_generator(), find_if_exists=find_if_exists, id_block_size=block
    )


def in_parallel[T](jobs: list[Callable[[], T]]) -> list[T | Exception]:
    def run(job: Callable[[], T]) -> T | Exception:
        try:
            return job()
        except Exception as exc:  # collected: the test asserts on them
            return exc

    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        return list(pool.map(run, jobs, timeout=60))


def shorten(service: LinkService, url: str, code: str | None = None) -> Callable[[], ShortenResult]:
    return lambda: service.shorten(ShortenRequest(url=url, code=code), POLICY, ShortUrls("https://sho.rt/"))


def assert_stored_as_answered(table: str, results: list[ShortenResult]) -> None:
    """Every answer's code holds exactly the URL that answer reported: nothing was overwritten."""
    stored = LinksStore(table).get_many([result.code for result in results])
    for result in results:
        assert stored[result.code].url == result.url


@pytest.mark.parametrize("find_if_exists", [True, False])
def test_concurrent_new_urls_get_unique_codes(tables: dict[str, str], find_if_exists: bool) -> None:
    # Given 32 containers
    table = tables["LINKS_TABLE"]
    # When each shortens 4 different URLs at the same time
    jobs = [
        shorten(container(table, find_if_exists=find_if_exists), f"https://example.com/{thread}/{n}")
        for thread in range(THREADS)
        for n in range(4)
    ]
    results = in_parallel(jobs)
    # Then every request succeeded with its own code, and each code holds its URL
    assert all(isinstance(result, ShortenResult) and result.created for result in results)
    links = [result for result in results if isinstance(result, ShortenResult)]
    assert len({link.code for link in links}) == len(links) == THREADS * 4
    assert_stored_as_answered(table, links)


def test_contested_custom_code_has_exactly_one_winner(tables: dict[str, str]) -> None:
    # Given 32 containers that each want the code "launch" for a different URL
    table = tables["LINKS_TABLE"]
    jobs = [shorten(container(table), f"https://example.com/{n}", code="launch") for n in range(THREADS)]
    # When they ask at the same moment
    results = in_parallel(jobs)
    # Then exactly one gets it and the rest are told it is taken
    winners = [result for result in results if isinstance(result, ShortenResult)]
    assert len(winners) == 1
    assert Counter(type(result) for result in results)[CodeTakenError] == THREADS - 1
    assert LinksStore(table).get("launch", consistent=True).url == winners[0].url  # type: ignore[union-attr]


def test_one_url_gets_one_code_under_find_if_exists(tables: dict[str, str]) -> None:
    # Given 32 containers shortening the same URL at the same moment
    table = tables["LINKS_TABLE"]
    results = in_parallel([shorten(container(table), "https://example.com/same") for _ in range(THREADS)])
    # Then they all get one code, and exactly one of them created it
    links = [result for result in results if isinstance(result, ShortenResult)]
    assert len(links) == THREADS
    assert len({link.code for link in links}) == 1
    assert sum(link.created for link in links) == 1


def test_custom_codes_in_the_generated_space_survive_batch_writers(tables: dict[str, str]) -> None:
    # Given custom codes equal to the codes the counter will generate for ids 1..96
    table = tables["LINKS_TABLE"]
    generator = code_generator()
    future_codes = [generator.encode(link_id) for link_id in range(1, 97)]
    custom_jobs = [
        shorten(container(table), f"https://custom.example/{code}", code=code) for code in future_codes
    ]

    def bulk_writer(n: int) -> list[Link]:
        # What a bulk loop does: a block of ids from one counter write, then an unconditional batch.
        store = LinksStore(table)
        links = [
            Link(
                code=generator.encode(link_id),
                url=f"https://bulk.example/{n}/{link_id}",
                created_at=clock.now(),
            )
            for link_id in store.allocate_ids(4, generator.fingerprint)
        ]
        store.put_generated_batch(links)
        return links

    # When they race writers that batch-write generated codes through those same ids
    bulk_jobs = [lambda n=n: bulk_writer(n) for n in range(16)]
    results = in_parallel(
        [job for pair in zip(custom_jobs[:16], bulk_jobs, strict=True) for job in pair] + custom_jobs[16:]
    )
    # Then each custom code either won (and its id was skipped) or was refused as taken
    custom = [result for result in results if isinstance(result, ShortenResult)]
    refused = [result for result in results if isinstance(result, CodeTakenError)]
    batched = [link for result in results if isinstance(result, list) for link in result]
    assert not [result for result in results if isinstance(result, Exception) and result not in refused]
    assert len(custom) + len(refused) == 96
    assert custom, "some custom codes should have won the race"
    # And no code was handed out twice, and every code holds the URL its writer was told
    assert not {link.code for link in custom} & {link.code for link in batched}
    stored = LinksStore(table).get_many([link.code for link in [*custom, *batched]])
    assert all(stored[link.code].url == link.url for link in [*custom, *batched])


def test_counter_skips_ids_reserved_by_custom_codes(tables: dict[str, str]) -> None:
    # Given a custom code that the counter would generate for id 3
    table = tables["LINKS_TABLE"]
    service = container(table, block=10)
    code_for_3 = code_generator().encode(3)
    service.shorten(
        ShortenRequest(url="https://custom.example/", code=code_for_3), POLICY, ShortUrls("https://sho.rt/")
    )
    # When the counter hands out ids 1..10
    ids = LinksStore(table).allocate_ids(10, code_generator().fingerprint)
    # Then id 3 is not among them
    assert ids == [1, 2, 4, 5, 6, 7, 8, 9, 10]


def test_custom_code_of_an_already_allocated_id_is_refused(tables: dict[str, str]) -> None:
    # Given the counter has handed out ids 1..10 (possibly in flight in a bulk job)
    table = tables["LINKS_TABLE"]
    LinksStore(table).allocate_ids(10, code_generator().fingerprint)
    # When a user asks for the code of id 5 as a custom code
    # Then it is refused as taken, even though no link is stored under it yet
    with pytest.raises(CodeTakenError):
        container(table).shorten(
            ShortenRequest(url="https://custom.example/", code=code_generator().encode(5)),
            POLICY,
            ShortUrls("https://sho.rt/"),
        )


def test_batched_claims_and_single_requests_agree_on_one_code_per_url(tables: dict[str, str]) -> None:
    # Given 40 URLs that bulk writers (batched claims) and single requests shorten at the same moment
    table = tables["LINKS_TABLE"]
    urls = [f"https://example.com/contested/{n}" for n in range(40)]
    generator = code_generator()

    def bulk_writer() -> dict[str, str]:
        store = LinksStore(table)
        links = [
            Link(code=generator.encode(link_id), url=url, created_at=clock.now())
            for link_id, url in zip(store.allocate_ids(len(urls), generator.fingerprint), urls, strict=True)
        ]
        store.put_generated_batch(links)
        winners = store.claim_urls([(url_key(link.url), link) for link in links])
        return {link.url: winners[url_key(link.url)].code for link in links}

    singles = [shorten(container(table), url) for url in urls for _ in range(2)]
    results = in_parallel([bulk_writer, *singles[:40], bulk_writer, *singles[40:], bulk_writer])
    # Then every writer was told the same code for each URL, and that code holds the URL
    assert not [result for result in results if isinstance(result, Exception)]
    told: dict[str, set[str]] = {url: set() for url in urls}
    for result in results:
        if isinstance(result, dict):
            for url, code in result.items():
                told[url].add(code)
        elif isinstance(result, ShortenResult):
            told[result.url].add(result.code)
    assert all(len(codes) == 1 for codes in told.values()), told
    stored = LinksStore(table).get_many([next(iter(codes)) for codes in told.values()])
    assert {link.url for link in stored.values()} == set(urls)

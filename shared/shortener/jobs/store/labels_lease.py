"""The jobs table's labels lease on a job item: one invocation at a time builds a job's QR labels
ZIP in one image format, and saves where its build stands (``LabelsBuild``) with the same
conditional write that keeps the lease, so a build continues in the next invocation, or after a
crash, from its last saved state."""

from typing import Any

from shortener.jobs.store.items import JobItems
from shortener.links.qr_model import LabelsBuild, QrFormat


class LabelsClaim:
    """A claimed labels lease and the build saved under it (None: none started yet)."""

    def __init__(self, build: LabelsBuild | None) -> None:
        self.build = build


class LabelsLease(JobItems):
    """The labels lease of a job item, one per image format."""

    def claim_labels(
        self,
        job_id: str,
        image_format: QrFormat,
        owner: str,
        *,
        handed: str | None,
        now: int,
        lease_until: int,
    ) -> LabelsClaim | None:
        """Take the right to build the job's labels as ``owner``: when nobody holds it, its lease
        ran out, ``owner`` holds it (a retry), or its holder ``handed`` it over. The lease then
        names ``owner``, so a duplicate of the handing-over event finds it held. None when another
        builder holds a lease that has not run out (or the job is gone)."""
        answer = self._update_if(
            job_id,
            UpdateExpression="SET #owner = :owner, #lease = :lease",
            ConditionExpression=(
                "attribute_exists(job_id) AND "
                "(attribute_not_exists(#lease) OR #lease < :now OR #owner IN (:owner, :handed))"
            ),
            ExpressionAttributeNames=_names(image_format, build=False),
            ExpressionAttributeValues={
                ":owner": {"S": owner},
                ":handed": {"S": handed or owner},
                ":lease": {"N": str(lease_until)},
                ":now": {"N": str(now)},
            },
            ReturnValues="ALL_NEW",
        )
        if answer is None:
            return None
        saved = answer.get("Attributes", {}).get(_build_attribute(image_format), {}).get("S")
        return LabelsClaim(LabelsBuild.model_validate_json(saved) if saved else None)

    def save_labels(
        self, job_id: str, image_format: QrFormat, owner: str, build: LabelsBuild, *, lease_until: int
    ) -> bool:
        """Save where ``owner``'s build stands and extend its lease; False when it no longer holds it."""
        return (
            self._update_if(
                job_id,
                UpdateExpression="SET #build = :build, #lease = :lease",
                ConditionExpression="#owner = :owner",
                ExpressionAttributeNames=_names(image_format),
                ExpressionAttributeValues={
                    ":owner": {"S": owner},
                    ":lease": {"N": str(lease_until)},
                    ":build": {"S": build.model_dump_json()},
                },
            )
            is not None
        )

    def release_labels(self, job_id: str, image_format: QrFormat, owner: str, *, finished: bool) -> None:
        """Give up ``owner``'s lease: its build failed (a retry may take it over at once, from the
        saved state), or it is finished (the saved state goes too)."""
        self._update_if(
            job_id,
            UpdateExpression="REMOVE #owner, #lease" + (", #build" if finished else ""),
            ConditionExpression="#owner = :owner",
            ExpressionAttributeNames=_names(image_format, build=finished),
            ExpressionAttributeValues={":owner": {"S": owner}},
        )


def _names(image_format: QrFormat, *, build: bool = True) -> dict[str, Any]:
    """The attributes' names (DynamoDB refuses a name an expression does not use)."""
    names = {"#owner": f"labels_{image_format}_owner", "#lease": f"labels_{image_format}_lease"}
    if build:
        names["#build"] = _build_attribute(image_format)
    return names


def _build_attribute(image_format: QrFormat) -> str:
    return f"labels_{image_format}_build"

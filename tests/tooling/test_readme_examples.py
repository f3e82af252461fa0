"""What the README shows is what its own examples produce."""

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_upload_examples_content_length_is_the_size_of_the_file_it_makes() -> None:
    text = README.read_text()
    # The python3 -c line that writes catalogue.csv, and the Content-Length the answer shows
    program = re.search(r"python3 -c '(.+)' > catalogue\.csv", text)
    shown = re.search(r'"headers":\{"Content-Length":"(\d+)"\}', text)
    assert program and shown
    made = subprocess.run([sys.executable, "-c", program.group(1)], capture_output=True, check=True).stdout
    assert int(shown.group(1)) == len(made)


def test_the_log_example_shows_the_report_line_the_local_lambda_prints() -> None:
    # The README says a REPORT line follows each invocation, and shows one as the runtime prints it
    text = README.read_text()
    assert "`REPORT` line" in text
    report = re.search(r"awslambda\.runtime  \S+ REPORT RequestId: .+ Max Memory Used: \d+ MB", text)
    assert report, "no REPORT line in the README's log example"

"""Parity with Google's robots.txt library, from its answers as data.

The data files are copies of ../shared/conformance (see tests/data/conformance):
Google's own test suite, the robotstxt-spec-test expectations, and Google's
answers for ~40 checks on each real file of the protego corpus.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from scrapy_rep import RobotsTxt, is_valid_token
from scrapy_rep.core.matcher import normalise_pattern, path_params_query

DATA = Path(__file__).parent / "data" / "conformance"


def _body(case: dict[str, Any]) -> bytes:
    if case.get("robotstxt") is None:
        return bytes.fromhex(case["robotstxt_hex"])
    return str(case["robotstxt"]).encode("utf-8")


def _cases(name: str) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads((DATA / name).read_text("utf-8"))["cases"]
    return cases


GOOGLE = json.loads((DATA / "google-test-suite.json").read_text("utf-8"))


@pytest.mark.parametrize("case", _cases("google-test-suite.json"), ids=lambda c: c["name"])
def test_google_test_suite(case: dict[str, Any]) -> None:
    rt = RobotsTxt.parse(_body(case))
    assert rt.allowed(case["url"], case["user_agent"]) is case["allowed"]


def test_google_test_suite_is_complete() -> None:
    assert len(GOOGLE["cases"]) == 145


@pytest.mark.parametrize("case", GOOGLE["helpers"]["GetPathParamsQuery"], ids=repr)
def test_path_params_query(case: dict[str, str]) -> None:
    assert path_params_query(case["input"]) == case["expected"]


@pytest.mark.parametrize("case", GOOGLE["helpers"]["MaybeEscapePattern"], ids=repr)
def test_escape_pattern(case: dict[str, str]) -> None:
    assert normalise_pattern(case["input"].encode("utf-8").decode("latin-1")) == case["expected"]


@pytest.mark.parametrize("case", GOOGLE["helpers"]["IsValidUserAgentToObey"], ids=repr)
def test_valid_token(case: dict[str, Any]) -> None:
    assert is_valid_token(case["input"]) is case["expected"]


@pytest.mark.parametrize("case", _cases("spec-test.json"), ids=lambda c: c["name"])
def test_spec_test(case: dict[str, Any]) -> None:
    rt = RobotsTxt.parse(_body(case))
    assert rt.allowed(case["url"], case["user_agent"]) is case["allowed"]


def test_spec_test_is_complete() -> None:
    assert len(_cases("spec-test.json")) == 400


def _corpus() -> dict[str, bytes]:
    with tarfile.open(DATA / "protego-corpus.tar.xz") as archive:
        return {
            member.name: archive.extractfile(member).read()  # type: ignore[union-attr]
            for member in archive.getmembers()
            if member.isfile()
        }


def test_corpus_dev_answers() -> None:
    files = _corpus()
    checked = 0
    mismatches: list[str] = []
    with gzip.open(DATA / "corpus-dev.jsonl.gz", "rt", encoding="utf-8") as lines:
        for raw in lines:
            entry = json.loads(raw)
            body = files[entry["file"]]
            assert hashlib.sha256(body).hexdigest() == entry["sha256"], entry["file"]
            rt = RobotsTxt.parse(body)
            for token, url, allowed in entry["checks"]:
                checked += 1
                if rt.allowed(url, token) is not allowed:
                    mismatches.append(f"{entry['file']}: {token} {url} expected {allowed}")
    assert len(files) == 4231
    assert checked == 165_807
    assert mismatches == []

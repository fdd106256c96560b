"""The code version every benchmark row records (``examples/benchmarks/benchlib/provenance.py``), on a throw-away
git repository: which edits make a row's commit or package version dirty, and what a checkout without git
gives."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from benchlib.provenance import RESULTS_DIR, code_version, git, package_commit


def _git(repo: Path, *cmd: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *cmd], check=True,
                   capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path / "repo"
    for rel, text in {"autogluon_maya/model.py": "x = 1\n", "examples/benchmarks/benchlib/tables.py": "t = 1\n",
                      "examples/benchmarks/benchlib/protocol.py": "p = 1\n", "docs/guide.md": "guide\n",
                      f"{RESULTS_DIR}/run/results.jsonl": "{}\n"}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "first")
    return root


def test_a_clean_checkout_records_head_three_times(repo):
    head = git(repo, "rev-parse", "--short", "HEAD")
    assert code_version(repo) == {"commit": head, "code_commit": head, "package_commit": head}


def test_an_edited_doc_dirties_the_commit_but_not_the_package_version(repo):
    head = git(repo, "rev-parse", "--short", "HEAD")
    (repo / "docs" / "guide.md").write_text("guide, edited\n")
    version = code_version(repo)
    assert version["commit"] == head + "-dirty" and version["package_commit"] == head


def test_an_edited_module_dirties_the_package_version(repo):
    head = git(repo, "rev-parse", "--short", "HEAD")
    (repo / "autogluon_maya" / "model.py").write_text("x = 2\n")
    assert code_version(repo)["package_commit"] == head + "-dirty"


def test_results_and_report_helpers_are_not_code_a_fit_depends_on(repo):
    head = git(repo, "rev-parse", "--short", "HEAD")
    (repo / RESULTS_DIR / "run" / "results.jsonl").write_text("{}\n{}\n")  # a running benchmark appends
    assert code_version(repo)["commit"] == head
    (repo / "examples" / "benchmarks" / "benchlib" / "tables.py").write_text("t = 2\n")
    _git(repo, "commit", "-qam", "tables")
    version = code_version(repo)
    assert version["commit"] != head and version["package_commit"] == head  # the report moved, the models did not
    assert package_commit(repo) == head


def test_the_split_of_p1_is_code_a_fit_depends_on(repo):
    head = git(repo, "rev-parse", "--short", "HEAD")
    (repo / "examples" / "benchmarks" / "benchlib" / "protocol.py").write_text("p = 2\n")
    assert code_version(repo)["package_commit"] == head + "-dirty"


def test_extra_excludes_count_as_results(repo):
    head = git(repo, "rev-parse", "--short", "HEAD")
    (repo / "docs" / "guide.md").write_text("guide, edited\n")
    assert code_version(repo, exclude=["docs"])["commit"] == head


def test_a_runs_output_folder_inside_the_repository_counts_as_results(repo, tmp_path):
    head = git(repo, "rev-parse", "--short", "HEAD")
    (repo / "docs" / "guide.md").write_text("guide, edited\n")
    assert code_version(repo)["commit"] == head + "-dirty"
    assert code_version(repo, out=repo / "docs")["commit"] == head
    assert code_version(repo, out=tmp_path / "elsewhere")["commit"] == head + "-dirty"  # outside: nothing excluded


def test_a_folder_without_git_gives_unknown_instead_of_failing(tmp_path):
    version = code_version(tmp_path)
    assert version["commit"].startswith("unknown") and version["package_commit"] == "unknown"


def test_the_package_version_of_head_follows_new_commits(repo):
    """A long run asks again after every commit: HEAD's answer is never cached, a commit hash's may be."""
    first = package_commit(repo)
    assert package_commit(repo, first) == first
    (repo / "autogluon_maya" / "model.py").write_text("x = 3\n")
    _git(repo, "commit", "-qam", "model")
    second = git(repo, "rev-parse", "--short", "HEAD")
    assert second != first and package_commit(repo) == second and package_commit(repo, first) == first

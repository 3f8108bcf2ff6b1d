"""A store URL's password stays out of files (league.store.secrets): environment
references in URLs, config.json without the password, a read-only Redis user."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
import redis
from redis_server import RedisServer

from league.config import TrainConfig
from league.store import (
    PASSWORD_VARIABLE,
    StoreError,
    expand_env,
    literal_password,
    open_store,
    url_for_files,
)
from league.training.loop import prepare_run

SECRET = "s3cret-7d1f"


def test_urls_name_environment_variables():
    url = "redis://:${MY_PW}@host:6379/0"
    assert expand_env(url, {"MY_PW": "abc"}) == "redis://:abc@host:6379/0"
    assert expand_env("redis://host:1/0", {}) == "redis://host:1/0"
    with pytest.raises(ValueError, match=r"\$\{MY_PW\}, which is not set"):
        expand_env(url, {})


@pytest.mark.parametrize(
    ("url", "written"),
    [
        ("redis://:s3cret@h:6379/0", "redis://:${LEAGUE_STORE_PASSWORD}@h:6379/0"),
        ("rediss://user:p%40ss@h/2", "rediss://user:${LEAGUE_STORE_PASSWORD}@h/2"),
        ("redis://:${MY_PW}@h:6379/0", "redis://:${MY_PW}@h:6379/0"),
        ("redis://h:6379/0", "redis://h:6379/0"),
        ("sqlite:///tmp/x.sqlite", "sqlite:///tmp/x.sqlite"),
        (None, None),
    ],
)
def test_files_get_the_url_without_its_password(url, written):
    assert url_for_files(url) == written
    assert literal_password(url) == (url != written)


def test_config_json_never_holds_the_password(tmp_path: Path, capsys) -> None:
    run_dir = tmp_path / "run"
    url = f"redis://:{SECRET}@127.0.0.1:1/0"
    lines: list[str] = []
    cfg = TrainConfig.from_dict({"env": "tictactoe", "run_dir": str(run_dir), "store": url})
    prepare_run(cfg, resume=False, log=lines.append)
    stored = json.loads((run_dir / "config.json").read_text())
    assert SECRET not in json.dumps(stored)
    assert stored["run"]["store"] == f"redis://:${{{PASSWORD_VARIABLE}}}@127.0.0.1:1/0"
    assert any(PASSWORD_VARIABLE in line for line in lines)


def test_a_run_dir_from_before_is_rewritten_at_resume(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    url = f"redis://:{SECRET}@127.0.0.1:1/0"
    cfg = TrainConfig.from_dict({"env": "tictactoe", "run_dir": str(run_dir), "store": url})
    (run_dir / "checkpoints").mkdir(parents=True)
    (run_dir / "config.json").write_text(json.dumps(cfg.to_dict()))  # the old way
    (run_dir / "checkpoints" / "latest.json").write_text(json.dumps({"iteration": 1}))
    assert SECRET in (run_dir / "config.json").read_text()
    _, latest = prepare_run(cfg, resume=True, log=lambda _: None)
    assert latest == {"iteration": 1}
    assert SECRET not in (run_dir / "config.json").read_text()


@pytest.fixture(scope="module")
def protected() -> RedisServer:
    with RedisServer(password=SECRET) as server:
        yield server


def test_a_url_reads_its_password_from_the_environment(
    protected: RedisServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"redis://:${{LEAGUE_TEST_PW}}@127.0.0.1:{protected.port}/0"
    with pytest.raises(StoreError, match="LEAGUE_TEST_PW"):
        open_store(url, tmp_path)
    monkeypatch.setenv("LEAGUE_TEST_PW", SECRET)
    namespace = f"env-{uuid.uuid4().hex}"
    with open_store(url, tmp_path, namespace=namespace) as store:
        assert store.commit({"players": []}, [{"episode_id": "e"}], expected_seq=0) == 1


def test_the_documented_read_only_user_reads_and_cannot_write(
    protected: RedisServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/cluster.md's ACL line, with this test's namespace for the default one."""
    namespace = f"ro-{uuid.uuid4().hex}"
    with open_store(protected.url(), tmp_path, namespace=namespace) as store:
        store.commit({"players": ["main_0"]}, [{"episode_id": "e"}], expected_seq=0)
    admin = redis.Redis(host="127.0.0.1", port=protected.port, password=SECRET)
    admin.execute_command(
        "ACL", "SETUSER", "league-reader", "on", ">readerpw", f"~{{{namespace}}}:*",
        "+@read", "+ping", "-@write",
    )  # fmt: skip
    admin.close()
    monkeypatch.setenv("LEAGUE_READER_PASSWORD", "readerpw")
    url = f"redis://league-reader:${{LEAGUE_READER_PASSWORD}}@127.0.0.1:{protected.port}/0"
    with open_store(url, tmp_path, namespace=namespace, read_only=True) as store:
        assert store.seq() == 1
        assert store.state()["players"] == ["main_0"]
        assert [m["episode_id"] for m in store.matches()] == ["e"]
    reader = redis.Redis(
        host="127.0.0.1", port=protected.port, username="league-reader", password="readerpw"
    )
    with pytest.raises(redis.exceptions.NoPermissionError):
        reader.set(f"{{{namespace}}}:seq", 99)
    reader.close()

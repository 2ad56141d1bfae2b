"""A real ``hookgate serve`` in front of the scripted model, with the policies of a config.

The config under test is any hookgate config file; what decides where requests go is replaced
so that every model (``"*"``) is served by one provider, ``dojo``, at the scripted model's URL;
the store is a fresh SQLite file, ``keys`` are dropped (the harness sends no key), the server
listens on a free loopback port without reloading, and the side-channel header
``x-dojo-scenario`` is forwarded upstream. Its ``policies`` (and ``policy_sets``,
``pricing``, ``audit``, ``sdk``) are kept as written — but with ``person``, where every
provenance ``deny`` sink asks a person instead (:mod:`evals.agentdojo.person`).
"""

from __future__ import annotations

import collections
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import yaml

from evals.agentdojo.person import with_approvals
from evals.agentdojo.scripted import SCENARIO_HEADER

_KEPT = ("policies", "policy_sets", "pricing", "audit", "sdk")


def gateway_config(
    config: Path, upstream_url: str, store: Path, person: bool = False
) -> dict[str, Any]:
    """The config ``hookgate serve`` runs: ``config``'s policies, the scripted upstream."""
    loaded = yaml.safe_load(config.read_text()) or {}
    if not isinstance(loaded, dict):
        raise ValueError(f"{config}: a hookgate config is a mapping")
    server = dict(loaded.get("server") or {})
    server.update(host="127.0.0.1", reload=False, ops=None)
    server.pop("port", None)
    forwarded = list(server.get("forward_headers") or [])
    server["forward_headers"] = [*forwarded, SCENARIO_HEADER]
    if server["ops"] is None:
        del server["ops"]
    made = {
        "server": server,
        "providers": {"dojo": {"base_url": upstream_url, "api_key": "dojo-scripted-model"}},
        "models": {"*": [{"provider": "dojo"}]},
        "store": f"sqlite:///{store.resolve()}",
        **{key: loaded[key] for key in _KEPT if key in loaded},
    }
    return with_approvals(made) if person else made


class Gateway:
    """``python -m hookgate serve`` as a subprocess; ``base_url`` ends in ``/v1``.

    Its log is drained on a thread (``log`` keeps the last lines, for a failure's report).
    """

    def __init__(
        self, config: Path, upstream_url: str, workdir: Path, person: bool = False
    ) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.config_path = workdir / "hookgate.yaml"
        made = gateway_config(config, upstream_url, workdir / "hookgate.db", person)
        self.config_path.write_text(yaml.safe_dump(made))
        self.log: collections.deque[str] = collections.deque(maxlen=200)
        self.base_url = ""
        self._process: subprocess.Popen[str] | None = None
        self._drain: threading.Thread | None = None

    def start(self) -> Gateway:
        command = [sys.executable, "-m", "hookgate", "serve", "--config", str(self.config_path)]
        self._process = subprocess.Popen(
            [*command, "--port", "0"],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            env=dict(os.environ),
        )
        assert self._process.stderr is not None
        while True:
            line = self._process.stderr.readline()
            if not line:
                self.stop()
                raise RuntimeError("hookgate exited before listening:\n" + "".join(self.log))
            self.log.append(line)
            match = re.search(r"listening on (http://[^\s,]+)", line)
            if match:
                self.base_url = match.group(1).rstrip("/") + "/v1"
                break
        self._drain = threading.Thread(target=self._read_log, daemon=True)
        self._drain.start()
        return self

    def _read_log(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        for line in self._process.stderr:
            self.log.append(line)

    def stop(self) -> None:
        if self._process is None:
            return
        self._process.terminate()
        try:
            self._process.wait(15)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(5)
        if self._drain is not None:
            self._drain.join(5)
        if self._process.stderr is not None:
            self._process.stderr.close()
        self._process = None

    def __enter__(self) -> Gateway:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

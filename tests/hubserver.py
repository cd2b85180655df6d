"""A small local stand-in for the Hugging Face Hub, for tests: it serves model repos from folders
through the routes huggingface_hub's own client calls, so `snapshot_download` with HF_ENDPOINT (or
`endpoint=`) pointing here really lists, downloads, resumes and checks files.

Routes (read from huggingface_hub 2.4's hf_api.py and file_download.py):
- GET /api/models/{repo}/revision/{rev}: model info (`sha`, `siblings`), for a branch name;
- GET /api/models/{repo}/tree/{rev}?recursive=...: the file listing (`type`, `path`, `size`, `oid`
  = git blob id, `lfs` = {oid: sha256, size, pointerSize} for weight files);
- HEAD and GET /{repo}/resolve/{rev}/{path} (and /datasets/{repo}/...): the file, with X-Repo-Commit, ETag (the git blob id,
  or for LFS files the sha256, also as X-Linked-Etag), Content-Length and Accept-Ranges; a
  `Range: bytes=N-` GET gets 206 and Content-Range (how a dropped download resumes).
Errors carry the X-Error-Code header the client maps to its exceptions (RepoNotFound,
RevisionNotFound, EntryNotFound, GatedRepo).

Uploads (read from huggingface_hub 2.4's hf_api.py and _commit_api.py), into `commits`:
- POST /api/repos/create: records the request (`created`), answers the repo URL;
- POST /api/validate-yaml: accepts any card;
- POST /api/{datasets,models}/{repo}/preupload/{rev}: every file "regular" (sent inside the commit);
- POST /api/{datasets,models}/{repo}/commit/{rev}: the NDJSON commit (header, base64 files), kept as
  a Commit; answers commitUrl and commitOid.

Faults, for the tests: `cut[path] = n` sends the first n bytes of the next full GET of that file and
drops the connection; `fail[path] = k` answers the next k GETs of that file with 500; `corrupt`
serves other bytes of the same size for the files named. Every request is logged in `requests`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse

LFS_SUFFIXES = (".safetensors", ".gguf", ".bin", ".pt", ".sif", ".sqsh", ".tar")


@dataclass
class Repo:
    """One served repo: its commit and the folder holding its files at that commit."""

    commit: str
    folder: Path
    token: str | None = None     # gated: only this bearer token may read it
    branches: tuple[str, ...] = ()   # names besides main that resolve to the commit (a branch named like a sha)

    def files(self) -> dict[str, Path]:
        """Repo path -> file, for every file of the folder."""
        return {p.relative_to(self.folder).as_posix(): p for p in sorted(self.folder.rglob("*")) if p.is_file()}


@dataclass
class Request:
    method: str
    path: str
    range: str | None
    status: int


@dataclass
class Commit:
    """One commit received: the repo, its type, the summary line and each file's bytes by path."""

    repo_id: str
    repo_type: str
    summary: str
    files: dict[str, bytes]


@dataclass
class HubServer:
    """The server; `start()` returns its endpoint URL."""

    repos: dict[str, Repo]
    requests: list[Request] = field(default_factory=list)
    cut: dict[str, int] = field(default_factory=dict)
    fail: dict[str, int] = field(default_factory=dict)
    corrupt: set[str] = field(default_factory=set)
    created: list[dict] = field(default_factory=list)
    commits: list[Commit] = field(default_factory=list)
    extra_names: list[str] = field(default_factory=list)   # listed besides the repo's files (a hostile mirror)

    def start(self) -> str:
        """Serve on a free port of 127.0.0.1 in a thread; returns the endpoint URL."""
        hub = self

        class Handler(_Handler):
            server_hub = hub

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()

    def gets(self, name: str) -> list[Request]:
        """The GET requests of one file's resolve route."""
        return [r for r in self.requests if r.method == "GET" and "/resolve/" in r.path and r.path.endswith("/" + name)]


def git_blob_id(data: bytes) -> str:
    """The git blob id of a file's bytes (what the Hub lists as `oid` for files not in LFS)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


_INFO = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)/(?P<kind>revision|tree)/(?P<rev>[^/?]+)")
_RESOLVE = re.compile(r"^/(?:datasets/)?(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<path>.+)$")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_hub: HubServer

    def log_message(self, *args) -> None:   # quiet
        pass

    def do_HEAD(self) -> None:
        self._serve(head=True)

    def do_GET(self) -> None:
        self._serve(head=False)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = unquote(urlparse(self.path).path)
        hub, as_json = self.server_hub, {"Content-Type": "application/json"}
        if path == "/api/repos/create":
            req = json.loads(body)
            repo_id = f"{req['organization']}/{req['name']}" if req.get("organization") else req["name"]
            hub.created.append({"repo_id": repo_id, **req})
            prefix = "datasets/" if req.get("type") == "dataset" else ""
            host = f"http://{self.headers.get('Host')}"
            return self._reply(200, as_json, json.dumps({"url": f"{host}/{prefix}{repo_id}", "name": repo_id}).encode())
        if path == "/api/validate-yaml":
            return self._reply(200, as_json, b'{"errors": [], "warnings": []}')
        m = re.match(r"^/api/(?P<type>datasets|models)/(?P<repo>[^/]+/[^/]+)/(?P<op>preupload|commit)/[^/]+$", path)
        if m is None:
            return self._error(404, "EntryNotFound", False)
        if m["op"] == "preupload":
            files = [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False, "oid": None}
                     for f in json.loads(body)["files"]]
            return self._reply(200, as_json, json.dumps({"files": files}).encode())
        lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        header = next(line["value"] for line in lines if line["key"] == "header")
        files = {line["value"]["path"]: base64.b64decode(line["value"]["content"]) for line in lines
                 if line["key"] == "file"}
        hub.commits.append(Commit(m["repo"], m["type"][:-1], header.get("summary", ""), files))
        oid = hashlib.sha1(body).hexdigest()
        url = f"http://{self.headers.get('Host')}/{m['type']}/{m['repo']}/commit/{oid}"
        return self._reply(200, as_json, json.dumps({"commitUrl": url, "commitOid": oid}).encode())

    def _reply(self, status: int, headers: dict[str, str], body: bytes = b"", head: bool = False) -> None:
        self.server_hub.requests.append(Request(self.command, urlparse(self.path).path, self.headers.get("Range"), status))
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        if "Content-Length" not in headers:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _error(self, status: int, code: str, head: bool) -> None:
        body = json.dumps({"error": code}).encode()
        self._reply(status, {"X-Error-Code": code, "X-Error-Message": code, "Content-Type": "application/json"},
                    body, head)

    def _repo(self, name: str, rev: str, head: bool) -> Repo | None:
        repo = self.server_hub.repos.get(name)
        if repo is None:
            self._error(404, "RepoNotFound", head)
            return None
        if repo.token and self.headers.get("Authorization") != f"Bearer {repo.token}":
            self._error(401, "GatedRepo", head)
            return None
        if rev not in (repo.commit, "main", *repo.branches):
            self._error(404, "RevisionNotFound", head)
            return None
        return repo

    def _serve(self, head: bool) -> None:
        path = unquote(urlparse(self.path).path)
        m = _INFO.match(path)
        if m:
            repo = self._repo(m["repo"], m["rev"], head)
            if repo is None:
                return
            files = repo.files()
            if m["kind"] == "revision":
                body = {"id": m["repo"], "modelId": m["repo"], "sha": repo.commit, "private": False,
                        "gated": bool(repo.token), "siblings": [{"rfilename": n} for n in files]}
            else:
                body = [self._entry(n, p.read_bytes()) for n, p in files.items()]
                body += [self._entry(n, b"{}") for n in self.server_hub.extra_names]
            self._reply(200, {"Content-Type": "application/json"}, json.dumps(body).encode(), head)
            return
        m = _RESOLVE.match(path)
        if not m:
            self._error(404, "EntryNotFound", head)
            return
        repo = self._repo(m["repo"], m["rev"], head)
        if repo is None:
            return
        file = repo.files().get(m["path"])
        if file is None:
            self._error(404, "EntryNotFound", head)
            return
        self._file(repo, m["path"], file.read_bytes(), head)

    @staticmethod
    def _entry(name: str, data: bytes) -> dict:
        entry = {"type": "file", "path": name, "size": len(data), "oid": git_blob_id(data)}
        if name.endswith(LFS_SUFFIXES):
            entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
        return entry

    def _file(self, repo: Repo, name: str, data: bytes, head: bool) -> None:
        hub = self.server_hub
        lfs = name.endswith(LFS_SUFFIXES)
        etag = hashlib.sha256(data).hexdigest() if lfs else git_blob_id(data)
        headers = {"X-Repo-Commit": repo.commit, "ETag": f'"{etag}"', "Accept-Ranges": "bytes",
                   "Content-Type": "application/octet-stream"}
        if lfs:
            headers["X-Linked-Etag"] = f'"{etag}"'
            headers["X-Linked-Size"] = str(len(data))
        if not head and name in hub.corrupt:
            data = bytes(b ^ 0xFF for b in data)
        if not head and hub.fail.get(name, 0) > 0:
            hub.fail[name] -= 1
            self._error(500, "InternalError", head)
            return
        start = 0
        rng = self.headers.get("Range")
        if not head and rng:
            start = int(re.match(r"bytes=(\d+)-", rng).group(1))
            headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
        body = data[start:]
        headers["Content-Length"] = str(len(body))
        if not head and not rng and name in hub.cut:
            n = hub.cut.pop(name)
            hub.requests.append(Request("GET", urlparse(self.path).path, None, 200))
            self.send_response(200)
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body[:n])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)   # the client sees a body cut short
            return
        self._reply(206 if start else 200, headers, body, head)


def go_online(monkeypatch) -> None:
    """Let this process's huggingface_hub reach the test hub: the suite runs with HF_HUB_OFFLINE=1
    (scripts/test.sh), and huggingface_hub reads it once, at import."""
    from huggingface_hub import constants

    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)


def unreachable_hub(monkeypatch, offline: bool) -> str:
    """The endpoint of a Hub that cannot be reached: a port just freed (nothing listens there), with this
    process's huggingface_hub online, or in offline mode (HF_HUB_OFFLINE) when `offline`."""
    import socket

    from huggingface_hub import constants

    go_online(monkeypatch)
    if offline:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"

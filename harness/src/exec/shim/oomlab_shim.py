"""oomlab's start-up shim, the part every framework's module shares: the status file oomlab
reads after the run, and which frameworks each process imported.

`sitecustomize.py` (beside this file, in the private folder oomlab puts first on PYTHONPATH)
imports it first; a framework's module (OOMLAB_SHIM_MODULES) imports it for `status`, `failure`
and `framework_seen`. Nothing here raises into the program.

Environment (set by oomlab):
  OOMLAB_SNAPSHOT_STATUS   the status file: one JSON object a line, {"pid", "event", "detail"}
                           and "file" for a snapshot written; events: python, the framework
                           modules' own (recording, unsupported, oom, exit, kept, ...), failed,
                           and framework (detail: its name; "version", and "settings": its
                           allocator's variables as set, at its import or, for the frameworks
                           below, at exit)

Written for every Python 3 (3.6 on); Python 2 parses it.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def _json_string(text):
    """A JSON string literal of `text`, without importing json at every Python start-up."""
    out = ['"']
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20:
            out.append("\\u%04x" % ord(ch))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def status(event, detail="", file_name=None, extra=()):
    """Appends one line to the status file; never raises. `extra`: more (name, text) fields."""
    path = os.environ.get("OOMLAB_SNAPSHOT_STATUS")
    if not path:
        return
    try:
        fields = ['"pid": %d' % os.getpid(), '"event": ' + _json_string(event),
                  '"detail": ' + _json_string(str(detail))]
        if file_name is not None:
            fields.append('"file": ' + _json_string(file_name))
        for name, text in extra:
            fields.append(_json_string(name) + ": " + _json_string(str(text)))
        line = ("{" + ", ".join(fields) + "}\n").encode("utf-8", "replace")
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
    except Exception:  # the status is a courtesy: the program must not notice its failure
        pass


# The variables that set the allocator of each framework seen at exit, as the frameworks
# document them (a framework's module names its own: framework_seen's `variables`).
_ALLOCATOR_VARIABLES = {
    "cupy": ("CUPY_GPU_MEMORY_LIMIT",),
    "jax": ("XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_MEM_FRACTION",
            "XLA_PYTHON_CLIENT_ALLOCATOR"),
    "rmm": (),
}


def framework_seen(name, module, variables=None):
    """One "framework" line: its version and its allocator's settings from the environment."""
    if variables is None:
        variables = _ALLOCATOR_VARIABLES.get(name, ())
    settings = ["%s=%s" % (variable, os.environ[variable])
                for variable in variables if os.environ.get(variable)]
    status("framework", name, extra=(("version", getattr(module, "__version__", "?")),
                                      ("settings", " ".join(settings))))


def frameworks_at_exit():
    """The frameworks without a module of their own (CuPy, JAX, RMM) that the process imported,
    seen at its end."""
    for name in sorted(_ALLOCATOR_VARIABLES):
        module = sys.modules.get(name)
        if module is not None:
            framework_seen(name, module)


def failure(what, error):
    status("failed", "%s: %s: %s" % (what, type(error).__name__, error))


def same_folder(entry, folder):
    try:
        return os.path.realpath(entry or ".") == os.path.realpath(folder)
    except Exception:
        return False


def importlib_part(frozen, name):
    """importlib's own classes without importing the importlib package at every start-up."""
    module = sys.modules.get(frozen)
    found = getattr(module, name, None)
    if found is None:
        import importlib.machinery
        found = getattr(importlib.machinery, name)
    return found

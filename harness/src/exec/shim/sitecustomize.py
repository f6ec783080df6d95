"""oomlab's start-up shim for the Python programs `oomlab exec` runs, with no change to them.

oomlab writes this file as `sitecustomize.py` into a private folder, beside `oomlab_shim.py` and
each registered framework's module, and puts that folder first on PYTHONPATH, so every Python
process of the program runs it at start-up (CPython's site.py imports `sitecustomize`). It then:
  - notes the process (a "python" status line), and at its exit the frameworks it imported;
  - runs each framework's module (OOMLAB_SHIM_MODULES, comma-separated: its `install()`), which
    records what that framework's allocator does (its memory snapshot, say);
  - runs the `sitecustomize` the environment had without it (the next one on sys.path), as site.py
    would have, an error in it reported as site.py reports one;
  - takes its folder off sys.path again, so that the program's sys.path is as it would be.
It prints nothing and raises nothing into the program: every failure of its own is appended to
the status file (oomlab_shim.py), which oomlab reads after the run.

Environment (set by oomlab): OOMLAB_SHIM_MODULES; OOMLAB_SNAPSHOT_DIR and
OOMLAB_ALLOCATOR_CAP_BYTES, without either of which it only chains; and what oomlab_shim.py and
the frameworks' modules read.

Written for every Python 3 (3.6 on); Python 2 parses it and only chains.
"""
import os
import sys

import oomlab_shim


def _ours(entry):
    """Whether a sys.path entry is the folder oomlab put first (this file's)."""
    return oomlab_shim.same_folder(entry, oomlab_shim.HERE)


def _find_theirs():
    """The sitecustomize this environment had without us (the next one on sys.path), or None."""
    try:
        path_finder = oomlab_shim.importlib_part("_frozen_importlib_external", "PathFinder")
        search = [entry for entry in sys.path if not _ours(entry)]
        spec = path_finder.find_spec("sitecustomize", search)
        if spec is None or spec.loader is None:
            return None
        import importlib.util
        return spec, importlib.util.module_from_spec(spec)
    except Exception as error:
        oomlab_shim.failure("looking for the environment's sitecustomize", error)
        return None


def _chain_sitecustomize():
    """Runs the environment's sitecustomize as CPython's site.execsitecustomize would have."""
    found = _find_theirs()
    if found is None:
        return
    spec, module = found
    ours = sys.modules.get("sitecustomize")
    sys.modules["sitecustomize"] = module  # a later `import sitecustomize` finds theirs
    try:
        spec.loader.exec_module(module)
    except Exception as err:
        sys.modules["sitecustomize"] = ours
        if isinstance(err, ImportError) and err.name == "sitecustomize":
            pass
        elif sys.flags.verbose:
            sys.excepthook(*sys.exc_info())
        else:
            sys.stderr.write("Error in sitecustomize; set PYTHONVERBOSE for traceback:\n"
                             "%s: %s\n" % (err.__class__.__name__, err))


def _install():
    oomlab_shim.status("python", sys.version.split()[0])
    import atexit
    atexit.register(oomlab_shim.frameworks_at_exit)
    for name in os.environ.get("OOMLAB_SHIM_MODULES", "").split(","):
        if not name:
            continue
        try:
            __import__(name).install()
        except Exception as error:
            oomlab_shim.failure("installing %s" % name, error)


def _chain_python2():
    """Python 2's site.py run of the environment's sitecustomize (and nothing more of ours)."""
    try:
        import imp
        found = imp.find_module("sitecustomize", [entry for entry in sys.path if not _ours(entry)])
    except Exception:
        return
    try:
        imp.load_module("sitecustomize", *found)
    except ImportError:
        pass
    except Exception:
        if sys.flags.verbose:
            sys.excepthook(*sys.exc_info())
        else:
            sys.stderr.write("'import sitecustomize' failed; use -v for traceback\n")
    finally:
        if found[0] is not None:
            found[0].close()


def _main():
    if sys.version_info[0] < 3:
        _chain_python2()
        return
    if os.environ.get("OOMLAB_SNAPSHOT_DIR") or os.environ.get("OOMLAB_ALLOCATOR_CAP_BYTES"):
        try:
            _install()
        except Exception as error:
            oomlab_shim.failure("installing the import watch", error)
    _chain_sitecustomize()
    # Our folder was needed only to find us: the program's sys.path is as it would be.
    try:
        sys.path[:] = [entry for entry in sys.path if not _ours(entry)]
        for entry in [key for key in sys.path_importer_cache if _ours(key)]:
            del sys.path_importer_cache[entry]
    except Exception as error:
        oomlab_shim.failure("leaving sys.path as it was", error)


_main()

# copctl's worker for a site's own Python plugins (filter_plugins/, test_plugins/,
# lookup_plugins/): one request a line on stdin, one answer a line on the descriptor copctl
# passes (stdout is the plugins' own, sent to stderr). Requests and answers are JSON.
import importlib.util
import json
import os
import sys
import traceback

proto = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)
sys.stdout = sys.stderr

modules = {}
UNDEFINED = "__copctl_undefined__"


class Undefined(Exception):
    pass


def load(path):
    m = modules.get(path)
    if m is None:
        spec = importlib.util.spec_from_file_location("copctl_site_plugin_%d" % len(modules), path)
        m = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(m)
        modules[path] = m
    return m


def table(path, kind):
    m = load(path)
    if kind == "filter":
        return m.FilterModule().filters()
    return m.TestModule().tests()


def plain(v):
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set, frozenset)):
        return [plain(x) for x in v]
    if v is None or isinstance(v, (str, bool, int, float)):
        return v
    if hasattr(v, "keys") and hasattr(v, "__getitem__"):
        return {str(k): plain(v[k]) for k in v.keys()}
    if hasattr(v, "__iter__") and not isinstance(v, (bytes, bytearray)):
        return [plain(x) for x in v]
    if isinstance(v, (bytes, bytearray)):
        return v.decode("utf-8", "surrogateescape")
    raise TypeError("a value of type %s cannot go back to copctl" % type(v).__name__)


def markers(values, accept):
    out = []
    for v in values:
        if isinstance(v, dict) and list(v) == [UNDEFINED]:
            if not accept:
                raise Undefined(v[UNDEFINED])
            out.append(None)
        else:
            out.append(v)
    return out


def lookup(req):
    cls = load(req["path"]).LookupModule
    loader = templar = None
    try:
        from ansible.parsing.dataloader import DataLoader
        from ansible.template import Templar

        loader = DataLoader()
        if req.get("basedir"):
            loader.set_basedir(req["basedir"])
        templar = Templar(loader=loader, variables=req["variables"])
    except ImportError:
        pass
    plugin = cls(loader=loader, templar=templar)
    terms = markers(req["terms"], getattr(cls, "accept_args_markers", False))
    return plugin.run(terms, variables=req["variables"], **req["kwargs"])


def answer(req):
    op = req["op"]
    if op == "names":
        return sorted(table(req["path"], req["kind"]))
    if op in ("filter", "test"):
        f = table(req["path"], op)[req["name"]]
        return f(*req["args"], **req["kwargs"])
    if op == "lookup":
        return lookup(req)
    raise ValueError("unknown request %r" % op)


for line in sys.stdin:
    try:
        out = {"ok": plain(answer(json.loads(line)))}
    except Undefined as e:
        out = {"undefined": str(e)}
    except Exception as e:
        out = {"error": str(e), "type": type(e).__name__, "trace": traceback.format_exc()}
    proto.write(json.dumps(out) + "\n")
    proto.flush()

# copctl's worker for a site's own Python plugins (filter_plugins/, test_plugins/,
# lookup_plugins/): one request a line on stdin, one answer a line on the descriptor copctl
# passes (stdout is the plugins' own, sent to stderr). Requests and answers are JSON.
import importlib.util
import json
import os
import sys
import traceback

# A lone surrogate (text from undecodable bytes) goes as "?": the answer stays UTF-8.
proto = os.fdopen(os.dup(1), "w", encoding="utf-8", errors="replace")
requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
os.dup2(2, 1)
sys.stdout = sys.stderr
# What plugins (and what they start) read is nothing: the requests are copctl's alone.
devnull = os.open(os.devnull, os.O_RDONLY)
os.dup2(devnull, 0)
sys.stdin.close()

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
    loader = templar = plugin = None
    try:
        from ansible.parsing.dataloader import DataLoader
        from ansible.template import Templar

        loader = DataLoader()
        if req.get("basedir"):
            loader.set_basedir(req["basedir"])
        templar = Templar(loader=loader, variables=req["variables"])
    except ImportError:
        pass
    if loader is not None:
        # Through Ansible's own plugin loader, as Ansible loads it: the plugin's documented
        # options (set_options, get_option) work then.
        from ansible.plugins.loader import lookup_loader

        ready_loader()
        lookup_loader.add_directory(os.path.dirname(req["path"]))
        name = os.path.splitext(os.path.basename(req["path"]))[0]
        plugin = lookup_loader.get(name, loader=loader, templar=templar)
    if plugin is None:
        plugin = load(req["path"]).LookupModule(loader=loader, templar=templar)
    terms = markers(req["terms"], getattr(plugin, "accept_args_markers", False))
    return plugin.run(terms, variables=req["variables"], **req["kwargs"])


loader_ready = False


def ready_loader():
    global loader_ready
    if not loader_ready:
        from ansible.plugins.loader import init_plugin_loader

        init_plugin_loader([])
        loader_ready = True


def module(req):
    # What Ansible sends a host for a module: its AnsiballZ payload (the module, the
    # module_utils it imports, its arguments with Ansible's internal ones), for the host's Python.
    import base64

    from ansible import __version__
    from ansible.executor.module_common import modify_module
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar

    ready_loader()
    args = dict(req["args"])
    args.update(
        {
            "_ansible_check_mode": req["check"],
            "_ansible_no_log": req["no_log"],
            "_ansible_debug": False,
            "_ansible_diff": req["diff"],
            "_ansible_verbosity": 0,
            "_ansible_version": __version__,
            "_ansible_module_name": req["name"],
            "_ansible_syslog_facility": "LOG_USER",
            "_ansible_selinux_special_fs": ["fuse", "nfs", "vboxsf", "ramfs", "9p", "vfat"],
            "_ansible_socket": None,
            "_ansible_shell_executable": "/bin/sh",
            "_ansible_keep_remote_files": False,
            "_ansible_tmpdir": None,
            "_ansible_remote_tmp": "~/.ansible/tmp",
            "_ansible_ignore_unknown_opts": False,
            "_ansible_target_log_info": None,
            "_ansible_tracebacks_for": [],
        }
    )
    built = modify_module(
        module_name=req["name"],
        module_path=req["path"],
        module_args=args,
        templar=Templar(loader=DataLoader()),
        task_vars={"ansible_python_interpreter": req["interpreter"]},
        module_compression="ZIP_DEFLATED",
    )
    if built.module_style != "new":
        raise ValueError(
            "%s is a module of style %r: copctl runs modules written with AnsibleModule"
            % (req["path"], built.module_style)
        )
    return base64.b64encode(built.b_module_data).decode("ascii")


def answer(req):
    op = req["op"]
    if op == "names":
        return sorted(table(req["path"], req["kind"]))
    if op in ("filter", "test"):
        f = table(req["path"], op)[req["name"]]
        return f(*req["args"], **req["kwargs"])
    if op == "lookup":
        return lookup(req)
    if op == "module":
        return module(req)
    raise ValueError("unknown request %r" % op)


for line in requests:
    try:
        text = json.dumps({"ok": plain(answer(json.loads(line)))}, allow_nan=False, ensure_ascii=False)
    except Undefined as e:
        text = json.dumps({"undefined": str(e)}, ensure_ascii=False)
    except Exception as e:
        text = json.dumps(
            {"error": str(e), "type": type(e).__name__, "trace": traceback.format_exc()}, ensure_ascii=False
        )
    proto.write(text + "\n")
    proto.flush()

"""Oracle for host patterns: Ansible's own InventoryManager, as `ansible PATTERN --limit L
--list-hosts` uses it (CLI.get_host_list, and the ad-hoc CLI's handling of its errors). Reads
[[pattern, limit|null], ...] as JSON on stdin, prints a JSON list of host lists (or {"error": ...})
in the same order. Every argument is an inventory source, read in order as `-i` reads them."""
import json
import sys

from ansible.errors import AnsibleError
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.utils.display import Display

Display().verbosity = 0
inv = InventoryManager(loader=DataLoader(), sources=sys.argv[1:])
empty_inventory = not inv.list_hosts()
out = []
for pattern, limit in json.load(sys.stdin):
    inv.subset(limit)
    inv.clear_caches()
    try:
        hosts = [h.name for h in inv.get_hosts(pattern)]
        if not hosts and not empty_inventory:
            raise AnsibleError("Specified inventory, host pattern and/or --limit leaves us with no hosts to target.")
        out.append(hosts)
    except Exception as e:  # noqa: BLE001 - any Ansible error is an answer here
        # Without --limit the ad-hoc CLI warns "No hosts matched, nothing to do" and lists none.
        out.append({"error": str(e)} if limit else [])
print(json.dumps(out))

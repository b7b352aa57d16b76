"""Oracle for host patterns: Ansible's own InventoryManager, as `ansible PATTERN --limit L
--list-hosts` uses it. Reads [[pattern, limit|null], ...] as JSON on stdin, prints a JSON list of
host lists (or {"error": ...}) in the same order."""
import json
import sys

from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.utils.display import Display

Display().verbosity = 0
inv = InventoryManager(loader=DataLoader(), sources=[sys.argv[1]])
out = []
for pattern, limit in json.load(sys.stdin):
    inv.subset(limit)
    inv.clear_caches()
    try:
        out.append([h.name for h in inv.get_hosts(pattern)])
    except Exception as e:  # noqa: BLE001 - any Ansible error is an answer here
        out.append({"error": str(e)})
print(json.dumps(out))

# The benchmark's file workload for pyinfra: deploy.py, then bench-files.yaml's play (a 1 MiB
# copy and a template from play and host variables), operation for operation.
import os

from pyinfra import host, local
from pyinfra.operations import files

local.include(os.path.join(os.path.dirname(__file__), "deploy.py"))

site = os.environ["BENCH_SITE"]
play = {"app_name": "cop-bench", "app_port": 8443}

files.directory(name="bench directory", path="/opt/bench", mode="755")
files.put(name="payload (1 MiB)", src=os.path.join(site, "files/payload.bin"), dest="/opt/bench/payload.bin", mode="644")
files.template(
    name="node configuration",
    src=os.path.join(site, "templates/bench-node.conf.j2"),
    dest="/opt/bench/node.conf",
    mode="640",
    inventory_hostname=host.name,
    node_index=host.data.node_index,
    ingress_ip=host.data.ingress_ip,
    sub_domain=host.data.sub_domain,
    domain=host.data.domain,
    TLD=host.data.TLD,
    **play,
)

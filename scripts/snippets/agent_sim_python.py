"""The README's Python snippet, run for real: the agent-sim image from testcontainers-python.

Run by scripts/snippets/run.sh (which installs testcontainers from PyPI into a venv, needs a
Docker daemon and the agent-sim:latest image from scripts/build-images.sh). Argument: a free
HTTP port and a free gRPC port on the host. The lines between the snippet markers are the
README's snippet, byte for byte (agent-sim/tests/readme_snippets.rs checks that).
"""

import json
import sys
import urllib.request

http_port, grpc_port = sys.argv[1], sys.argv[2]

# snippet:start
from testcontainers.core.container import DockerContainer
from testcontainers.core.wait_strategies import LogMessageWaitStrategy

sim = (DockerContainer("agent-sim:latest")
       .with_kwargs(network_mode="host")
       .with_command(f"--listen 127.0.0.1:{http_port} --grpc-listen 127.0.0.1:{grpc_port}")
       .waiting_for(LogMessageWaitStrategy("export CONSUL_HTTP_ADDR=")))
with sim:
    consul_http_addr = f"127.0.0.1:{http_port}"
# snippet:end
    # Still inside `with`: the simulated agent answers Consul's HTTP API.
    with urllib.request.urlopen(f"http://{consul_http_addr}/v1/agent/self", timeout=10) as r:
        body = json.load(r)
    assert r.status == 200, r.status
    assert body["Config"]["Datacenter"], body
    with urllib.request.urlopen(f"http://{consul_http_addr}/v1/status/leader", timeout=10) as r:
        leader = json.load(r)
    assert leader, leader

# `with` removed the container: the port no longer answers.
try:
    urllib.request.urlopen(f"http://127.0.0.1:{http_port}/v1/status/leader", timeout=2)
except OSError:
    pass
else:
    raise AssertionError("agent-sim still answers after the container was removed")
print("python snippet: 1 passed, 0 failed")

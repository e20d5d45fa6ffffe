"""Run the production-stack router's pod-ip service discovery (vllm-stack-0.1.12)
and print what it lists: one JSON line {"t": unix seconds, "engines": {pod: [model ids]}}
each time that changes. Arguments: the directory holding vllm_router/service_discovery.py
of that release (the test reads it from a git repository of production-stack; it is not
in this repository), namespace, label selector, engine port. The kubeconfig comes from
KUBECONFIG, as the router reads it outside a cluster."""

import json
import logging
import os
import sys
import time
import types

source = sys.argv[1]
pkg = types.ModuleType("vllm_router")
pkg.__path__ = [os.path.join(source, "vllm_router")]
log = types.ModuleType("vllm_router.log")
log.init_logger = lambda name: logging.getLogger(name)
utils = types.ModuleType("vllm_router.utils")  # used by the static discovery only
pkg.log, pkg.utils = log, utils
sys.modules.update({"vllm_router": pkg, "vllm_router.log": log, "vllm_router.utils": utils})
logging.basicConfig(stream=sys.stderr, level=logging.INFO)

from vllm_router.service_discovery import K8sPodIPServiceDiscovery  # noqa: E402

namespace, selector, port = sys.argv[2], sys.argv[3], sys.argv[4]
sd = K8sPodIPServiceDiscovery(app=None, namespace=namespace, port=port, label_selector=selector)
last = None
while True:
    engines = {e.pod_name: sorted(e.model_names) for e in sd.get_endpoint_info()}
    if engines != last:
        print(json.dumps({"t": time.time(), "engines": engines}), flush=True)
        last = engines
    time.sleep(0.01)

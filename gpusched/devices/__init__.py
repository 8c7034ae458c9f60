"""gpusched.devices: the GPUs of a node as NVIDIA's device plugin, GFD and mig-manager see them.

Modules (see docs/design.md):

- ``catalog``: ``GpuModel``, ``CATALOG``, ``lookup_model``;
- ``mig_profiles`` (data) and ``mig``: MIG profiles, ``place``, named/custom layouts;
- ``plugin_config``: device-plugin config v1, ``select_config``, ``find_device_plugin_configmap``;
- ``gfd``: ``gfd_labels``;
- ``node``: ``NodeDevices`` (advertised resources, allocation, who holds which device);
- ``nodepool``: ``expand_nodepool``; ``advertise``: ``node_device_state`` for a Node dict.

Layer: imports ``gpusched.objects`` and ``gpusched.errors`` only; used by the scheduler and above.
"""

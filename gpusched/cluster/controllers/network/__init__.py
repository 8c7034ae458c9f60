"""Network controllers: Services' Endpoints and EndpointSlices.

``endpoints`` is kube-controller-manager's endpoints and endpointslice controllers
(``pkg/controller/endpoint``, ``pkg/controller/endpointslice``): the ready pods a Service
selects, with their simulated IPs.

Neighbours: ``controllers.registry``; ``kubelet.node_status`` (pod IPs).
"""

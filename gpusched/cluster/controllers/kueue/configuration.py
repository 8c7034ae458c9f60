"""Kueue's Configuration on the embedded cluster: ``controller_manager_config.yaml`` of the
ConfigMap ``kueue-system/kueue-manager-config``, where Kueue's manager reads it
(``apis/config/v1beta2/configuration_types.go``). Parsed once per text; a text that does not
parse is logged once and read as no Configuration (Kueue's defaults). Callers read the parsed
dict, never change it (it is shared through the cache).

Neighbours: ``pods_ready`` (``waitForPodsReady``), ``snapshot`` (``fairSharing``).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from typing import Any

import yaml

from gpusched.cluster.apiserver.view import View

log = logging.getLogger(__name__)
CONFIG_NAMESPACE, CONFIG_NAME = "kueue-system", "kueue-manager-config"
CONFIG_KEY = "controller_manager_config.yaml"


def configuration(view: View) -> Mapping[str, Any] | None:
    """The Configuration of Kueue's ConfigMap (None without one, or when it does not parse)."""
    body = view.get("ConfigMap", CONFIG_NAME, CONFIG_NAMESPACE)
    text = ((body or {}).get("data") or {}).get(CONFIG_KEY)
    return _parsed(str(text)) if text else None


@functools.lru_cache(maxsize=16)
def _parsed(text: str) -> Mapping[str, Any] | None:
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as err:
        log.warning("ConfigMap %s/%s: %s: %s; Kueue's defaults apply", CONFIG_NAMESPACE, CONFIG_NAME, CONFIG_KEY, err)
        return None
    return loaded if isinstance(loaded, dict) else None

/**
 * Minimal stand-ins for a framework's registry, logging and checkpoint machinery (OpenMMLab's `Registry`, its
 * `build_*_from_cfg` functions, `print_log` and its logger class, `PretrainedInit` with the checkpoint loaders behind
 * it, `master_only`): a pulled block keeps the semantics it uses (register a class under a name, look one up, build
 * one from `dict(type=...)`, a parent registry to fall back on, load a checkpoint file or URL, run only on rank 0)
 * without the framework's scopes, lazy imports, configuration files, logging and storage backends behind them. The
 * stand-in replaces the unit; nothing it needed is pulled.
 */
import type { ModuleRecord } from './moduleTable';

const REGISTRY = `class Registry:
    """A minimal registry written by NN-RAG in place of {where}: register_module, get, build, a parent to fall
    back on. Scopes, lazy locations and the framework's logging are left out."""

    def __init__(self, name, build_func=None, parent=None, scope=None, locations=None):
        self.name = name
        self._module_dict = {}
        self.parent = parent
        self._scope = scope
        self.build_func = build_func if build_func is not None or parent is None else parent.build_func
        # the registries made with this one as their parent, by scope (code that walks the tree reads them)
        self.children = {}
        if parent is not None:
            parent.children.setdefault(scope or name, self)

    @property
    def module_dict(self):
        return self._module_dict

    @property
    def scope(self):
        return self._scope

    def switch_scope_and_registry(self, scope):
        """One registry for every scope here: the context gives this registry."""
        registry = self

        class Switch:
            def __enter__(self):
                return registry

            def __exit__(self, *exc):
                return False

        return Switch()

    def __len__(self):
        return len(self._module_dict)

    def __contains__(self, key):
        return self.get(key) is not None

    def __repr__(self):
        return f"Registry(name={self.name}, items={sorted(self._module_dict)})"

    def register_module(self, name=None, force=False, module=None):
        def register(cls):
            names = [cls.__name__] if name is None else [name] if isinstance(name, str) else list(name)
            for key in names:
                if key in self._module_dict and not force and self._module_dict[key] is not cls:
                    raise KeyError(f"{key} is already registered in {self.name}")
                self._module_dict[key] = cls
            return cls

        return register(module) if module is not None else register

    def get(self, key):
        if not isinstance(key, str):
            return key
        key = key.split(".")[-1]
        if key in self._module_dict:
            return self._module_dict[key]
        return self.parent.get(key) if self.parent is not None else None

    def build(self, cfg, *args, **kwargs):
        if self.build_func is not None:
            return self.build_func(cfg, *args, **kwargs, registry=self)
        return build_from_cfg(cfg, self, *args, **kwargs)`;

const BUILD_FROM_CFG = `def build_from_cfg(cfg, registry, default_args=None):
    """A minimal build_from_cfg written by NN-RAG in place of {where}: the class registered under cfg["type"]
    (or given as a class), called with the rest of cfg and default_args."""
    args = dict(cfg)
    for key, value in dict(default_args or {}).items():
        args.setdefault(key, value)
    args.pop("_scope_", None)
    obj_type = args.pop("type")
    obj_cls = registry.get(obj_type) if isinstance(obj_type, str) else obj_type
    if obj_cls is None:
        raise KeyError(f"{obj_type} is not in the {registry.name} registry")
    return obj_cls(**args)`;

const BUILD_MODEL_FROM_CFG = `def build_model_from_cfg(cfg, registry, default_args=None):
    """A minimal build_model_from_cfg written by NN-RAG in place of {where}: a list of configurations builds an
    nn.Sequential of their models."""
    if isinstance(cfg, list):
        import torch.nn
        return torch.nn.Sequential(*[build_from_cfg(c, registry, default_args) for c in cfg])
    return build_from_cfg(cfg, registry, default_args)`;

const PRINT_LOG = `def print_log(msg, logger=None, level=20):
    """A minimal print_log written by NN-RAG in place of {where}: the message goes to Python's logging (it
    only logs: parameters and outputs are the same)."""
    import logging
    if logger == "silent":
        return
    if isinstance(logger, logging.Logger):
        logger.log(level, msg)
    else:
        logging.getLogger(logger if isinstance(logger, str) and logger != "current" else "nnrag").log(level, msg)`;

const LOGGER = `class {name}:
    """A minimal stand-in written by NN-RAG for {where}: its instances are Python's own loggers (it only logs)."""

    @classmethod
    def get_current_instance(cls):
        import logging
        return logging.getLogger("nnrag")

    @classmethod
    def get_instance(cls, name="nnrag", **kwargs):
        import logging
        return logging.getLogger(name)`;

const PRETRAINED_INIT = `class PretrainedInit:
    """A minimal PretrainedInit written by NN-RAG in place of {where}: loads a checkpoint (a local file or an
    http(s) URL) with torch, optionally the part under a prefix, into the module (not strict). The framework's other
    checkpoint schemes (open-mmlab://, s3://, ...) and its logging are left out."""

    def __init__(self, checkpoint, prefix=None, map_location="cpu"):
        self.checkpoint = checkpoint
        self.prefix = prefix
        self.map_location = map_location

    def __call__(self, module):
        import re
        import torch
        source = str(self.checkpoint)
        if source.startswith(("http://", "https://")):
            state = torch.hub.load_state_dict_from_url(source, map_location=self.map_location)
        else:
            state = torch.load(source, map_location=self.map_location)
        if isinstance(state, dict) and "state_dict" in state:
            state = state["state_dict"]
        if self.prefix is not None:
            prefix = self.prefix if self.prefix.endswith(".") else self.prefix + "."
            state = {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
            if not state:
                raise ValueError(f"{prefix} is not a prefix of the keys in {source}")
        else:
            state = {re.sub(r"^module\\.", "", k): v for k, v in state.items()}
        module.load_state_dict(state, strict=False)

    def _get_init_info(self):
        return f"{self.__class__.__name__}: load from {self.checkpoint}"`;

const MASTER_ONLY = `def master_only(func):
    """A minimal master_only written by NN-RAG in place of {where}: runs func only in the main process of a
    distributed run (rank 0), or always when there is none."""
    import functools

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        import torch.distributed as dist
        if not (dist.is_available() and dist.is_initialized()) or dist.get_rank() == 0:
            return func(*args, **kwargs)

    return wrapper`;

/** A stand-in: its source, the names it calls (`needs`) and those it needs when it is defined (a decorator's). */
export interface StandIn {
  source: string;
  needs: string[];
  needsAtDefinition?: string[];
}

/** The stand-in source for a unit, or undefined when it is not registry or logging machinery. `{where}` names the
 * original. */
export function compactStandIn(rec: ModuleRecord, unit: number): StandIn | undefined {
  const u = rec.facts.units[unit];
  const where = `${rec.module}.${u.name ?? ''}`;
  // the checkpoint machinery behind a framework's pretrained initialiser, and its main-process decorator
  if (/(^|\.)weight_init$/.test(rec.module) && u.kind === 'class' && u.name === 'PretrainedInit') {
    const fact = rec.facts.classes.find((c) => c.unit === unit);
    if (!fact?.methods.includes('__call__')) return undefined;
    // its registration is kept: the framework builds initialisers from `dict(type="Pretrained", ...)`
    const registered = rec.facts.imports.some((i) => (i.bound ?? i.name) === 'WEIGHT_INITIALIZERS');
    const source = PRETRAINED_INIT.replace('{where}', where);
    return registered
      ? { source: `@WEIGHT_INITIALIZERS.register_module(name="Pretrained")\n${source}`, needs: [], needsAtDefinition: ['WEIGHT_INITIALIZERS'] }
      : { source, needs: [] };
  }
  if (/(^|\.)dist(\.|$)/.test(rec.module) && u.kind === 'function' && u.name === 'master_only')
    return { source: MASTER_ONLY.replace('{where}', where), needs: [] };
  if (/(^|\.)logging(\.|$)/.test(rec.module)) {
    if (u.kind === 'function' && u.name === 'print_log') return { source: PRINT_LOG.replace('{where}', where), needs: [] };
    const fact = u.kind === 'class' ? rec.facts.classes.find((c) => c.unit === unit) : undefined;
    if (fact && fact.bases.some((b) => /(^|\.)Logger$/.test(b)) && fact.methods.includes('get_current_instance')) {
      return { source: LOGGER.replace('{name}', fact.name).replace('{where}', where), needs: [] };
    }
    return undefined;
  }
  if (!/(^|\.)registry(\.|$)|registr/.test(rec.module)) return undefined;
  if (u.kind === 'class' && u.name === 'Registry') {
    const fact = rec.facts.classes.find((c) => c.unit === unit);
    if (!fact || !['register_module', 'get', 'build'].every((m) => fact.methods.includes(m))) return undefined;
    return { source: REGISTRY.replace('{where}', where), needs: ['build_from_cfg'] };
  }
  if (u.kind === 'function' && u.name === 'build_from_cfg') return { source: BUILD_FROM_CFG.replace('{where}', where), needs: [] };
  if (u.kind === 'function' && u.name === 'build_model_from_cfg') return { source: BUILD_MODEL_FROM_CFG.replace('{where}', where), needs: ['build_from_cfg'] };
  return undefined;
}

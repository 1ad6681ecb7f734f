"""The store on etcd, by concern.

- :mod:`.client`: a small etcd v3 client over etcd's HTTP/JSON gateway, failing over across
  the members;
- :mod:`.replies`: etcd's answers as typed Structs, decoded once (base64 included);
- :mod:`.keys`: the key layout under the prefix and the codecs of the meta key and the event
  keys;
- :mod:`.durability`: :class:`~podium.store.etcd.durability.EtcdDurability`, the store actor's
  durability in etcd, and its factory;
- :mod:`.election`: leader election among replicas (an etcd lease and the leader key);
- :mod:`.export`: the copy of a prefix into a SQLite file (``podium db backup etcd://...``).

This package builds on store/ (the actor, the core, the SQLite schema and tools, the store URL
:mod:`podium.store.location`, the credentials :mod:`podium.store.credentials`), and nothing in
store/ outside it imports it: the daemon and the CLI choose etcd, not the store.
"""

"""The store on etcd, by concern.

- :mod:`.client`: a small etcd v3 client over etcd's HTTP/JSON gateway, failing over across
  the members;
- :mod:`.replies`: etcd's answers as typed Structs, decoded once (base64 included);
- :mod:`.keys`: the key layout under the prefix and the codecs of the meta key and the event
  keys;
- :mod:`.durability`: :class:`~podium.store.etcd.durability.EtcdDurability`, the store actor's
  durability in etcd, and its factory.

Beside them in store/: the store URL (:mod:`podium.store.location`), the credentials
(:mod:`podium.store.credentials`), leader election (:mod:`podium.store.election`) and the
copy of a prefix into SQLite (:mod:`podium.store.export`).
"""

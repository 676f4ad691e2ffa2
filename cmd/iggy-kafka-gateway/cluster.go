package main

// Cluster mode's flags (docs/CLUSTER.md) into gateway.ClusterConfig; the
// gateway package joins the cluster (gateway/cluster.go).

import "fmt"

func clusterOptions(c *config) []option {
	return []option{
		{flag: "cluster-etcd-endpoints", defText: "none: a one-node cluster",
			usage: "etcd client URLs, comma-separated: this gateway joins the cluster of gateways on the same --cluster-id and Iggy (--backend iggy only; node id = --instance-id); docs/CLUSTER.md",
			set:   func(v string) error { c.Cluster.Endpoints = listItems(v, ","); return nil }},
		{flag: "cluster-session-ttl-secs", def: "10",
			usage: "cluster mode: a gateway that cannot renew its etcd session this long stops writing, and the others take its partitions and groups",
			set:   secondsIn(2, to(&c.Cluster.TTL))},
	}
}

// resolveCluster checks cluster mode against the other settings.
func (c *config) resolveCluster() error {
	if len(c.Cluster.Endpoints) == 0 {
		return nil
	}
	if c.Store.Kind != "iggy" {
		return fmt.Errorf("--cluster-etcd-endpoints needs --backend iggy: the embedded store belongs to one gateway")
	}
	if c.Handlers.InstanceID == 0 {
		return fmt.Errorf("--cluster-etcd-endpoints needs --instance-id 1..65535, unique per gateway: it is the gateway's node id")
	}
	// The node id is the instance id, so the producer ids a gateway hands
	// out (instance id in their high bits) never collide with another's.
	c.Handlers.NodeID = int32(c.Handlers.InstanceID)
	return nil
}

// resolveTransactions picks the transaction.version: 2 by default, 1 in
// cluster mode, where 2 is refused: under it a partition's leader adds the
// partition to the transaction at its coordinator (KIP-890), and gateways
// do not send each other that request (docs/TRANSACTIONS.md, "Cluster
// mode").
func (c *config) resolveTransactions() error {
	t := &c.Handlers.Transactions
	switch {
	case len(c.Cluster.Endpoints) == 0 && t.Version == 0:
		t.Version = 2
	case len(c.Cluster.Endpoints) == 0:
	case t.Version == 2 && t.Enabled:
		return fmt.Errorf("--transaction-version 2 is not served with --cluster-etcd-endpoints: use 1 (docs/TRANSACTIONS.md, \"Cluster mode\")")
	default:
		t.Version = 1
	}
	return nil
}

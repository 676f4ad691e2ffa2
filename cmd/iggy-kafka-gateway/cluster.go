package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/iggy-kafka/gateway/cluster"
	"github.com/iggy-kafka/gateway/handlers"
	"github.com/iggy-kafka/gateway/loop"
)

// clusterConfig is cluster mode (docs/CLUSTER.md): several gateways over
// one Iggy, coordinated through etcd.
type clusterConfig struct {
	Endpoints []string
	TTL       time.Duration
}

func clusterOptions() []option {
	return []option{
		{flag: "cluster-etcd-endpoints", defText: "none: a one-node cluster",
			usage: "etcd client URLs, comma-separated: this gateway joins the cluster of gateways on the same --cluster-id and Iggy (--backend iggy only; node id = --instance-id); docs/CLUSTER.md",
			set: func(c *config, v string) error {
				c.Cluster.Endpoints = nil
				for _, e := range strings.Split(v, ",") {
					if e = strings.TrimSpace(e); e != "" {
						c.Cluster.Endpoints = append(c.Cluster.Endpoints, e)
					}
				}
				return nil
			}},
		{flag: "cluster-session-ttl-secs", def: "10",
			usage: "cluster mode: a gateway that cannot renew its etcd session this long stops writing, and the others take its partitions and groups",
			set:   secondsIn(2, func(c *config, d time.Duration) { c.Cluster.TTL = d })},
	}
}

// resolveCluster checks cluster mode against the other settings.
func (c *config) resolveCluster() error {
	if len(c.Cluster.Endpoints) == 0 {
		return nil
	}
	if c.Backend != "iggy" {
		return fmt.Errorf("--cluster-etcd-endpoints needs --backend iggy: the embedded store belongs to one gateway")
	}
	if c.InstanceID == 0 {
		return fmt.Errorf("--cluster-etcd-endpoints needs --instance-id 1..65535, unique per gateway: it is the gateway's node id")
	}
	// The node id is the instance id, so the producer ids a gateway hands
	// out (instance id in their high bits) never collide with another's.
	c.NodeID = int32(c.InstanceID)
	return nil
}

// startCluster joins the cluster when configured (nil, nil otherwise).
// gw is filled once the gateway exists; view changes before that have no
// gateway state to drop.
func startCluster(cfg config, listeners []loop.Listener, gw *atomic.Pointer[handlers.Gateway], log *slog.Logger) (*cluster.Node, error) {
	if len(cfg.Cluster.Endpoints) == 0 {
		return nil, nil
	}
	self := cluster.Member{ID: cfg.NodeID, Listeners: map[string]cluster.Endpoint{}}
	for _, l := range listeners {
		self.Listeners[l.Name] = cluster.Endpoint{Host: l.AdvertisedHost, Port: l.AdvertisedPort}
	}
	ttl := cfg.Cluster.TTL
	// Waiting up to twice the TTL lets a gateway restarted after kill -9
	// take its id back once its previous session expired.
	ctx, cancel := context.WithTimeout(context.Background(), 2*ttl+10*time.Second)
	defer cancel()
	return cluster.Start(ctx, cluster.Options{
		Endpoints: cfg.Cluster.Endpoints,
		Prefix:    "/iggy-kafka/" + cfg.ClusterID + "/",
		Self:      self,
		TTL:       ttl,
		Log:       log,
		Changed: func(old, cur *cluster.View) {
			if g := gw.Load(); g != nil {
				g.ClusterChanged(old, cur)
			}
		},
	}, 2*ttl+5*time.Second)
}

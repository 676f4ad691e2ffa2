package gateway

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/iggy-kafka/gateway/cluster"
	"github.com/iggy-kafka/gateway/handlers"
	"github.com/iggy-kafka/gateway/loop"
)

// ClusterConfig is cluster mode (docs/CLUSTER.md): several gateways over
// one Iggy, coordinated through etcd. The node id is Handlers.NodeID, the
// cluster Handlers.ClusterID.
type ClusterConfig struct {
	Endpoints []string // etcd client URLs; none: a one-node cluster
	TTL       time.Duration
}

// startCluster joins the cluster when configured (nil, nil otherwise),
// registering each listener's advertised endpoint. gw is filled once the
// gateway exists; view changes before that have no gateway state to drop.
func startCluster(ctx context.Context, cfg Config, listeners []loop.Listener, gw *atomic.Pointer[handlers.Gateway], log *slog.Logger) (*cluster.Node, error) {
	if len(cfg.Cluster.Endpoints) == 0 {
		return nil, nil
	}
	self := cluster.Member{ID: cfg.Handlers.NodeID, Listeners: map[string]cluster.Endpoint{}}
	for _, l := range listeners {
		self.Listeners[l.Name] = cluster.Endpoint{Host: l.AdvertisedHost, Port: l.AdvertisedPort}
	}
	ttl := cfg.Cluster.TTL
	// Waiting up to twice the TTL lets a gateway restarted after kill -9
	// take its id back once its previous session expired.
	ctx, cancel := context.WithTimeout(ctx, 2*ttl+10*time.Second)
	defer cancel()
	return cluster.Start(ctx, cluster.Options{
		Endpoints: cfg.Cluster.Endpoints,
		Prefix:    "/iggy-kafka/" + cfg.Handlers.ClusterID + "/",
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

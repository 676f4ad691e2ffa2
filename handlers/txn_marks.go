package handlers

// Transaction markers in cluster mode (docs/TRANSACTIONS.md, "Cluster
// mode"): a transaction's coordinator and the leaders of its partitions
// are different gateways, and only a partition's leader writes it. The
// coordinator posts a marker request in etcd, one key per partition and
// producer (txnmark/<topic>/<partition>/<producer id>); every gateway
// watches these keys, the partition's leader writes the marker
// (txnEnv.WriteMarker, under the cluster's write gate) and deletes the
// key, and the coordinator returns once the key is gone. A request
// outlives either side: a leader that takes the partition over finds it
// at its next scan, and a coordinator that takes the id over posts it
// again (txn.Coordinator.Adopt).

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/iggy-kafka/gateway/cluster"
	"github.com/iggy-kafka/gateway/txn"
)

// txnMarkPrefix is where marker requests live in the cluster's shared
// state.
const txnMarkPrefix = "txnmark/"

// markRequest is one marker to write: the producer's epoch, the
// coordinator's epoch, commit or abort, and an offset at or before the
// transaction's first record on the partition.
type markRequest struct {
	epoch      int16
	coordEpoch int32
	commit     bool
	from       uint64
}

// markRequestLen is the stored form's length: u8 version 1, i16 epoch,
// i32 coordinator epoch, u8 commit, u64 from, big-endian.
const markRequestLen = 16

func (m markRequest) encode() []byte {
	b := make([]byte, 0, markRequestLen)
	b = append(b, 1)
	b = binary.BigEndian.AppendUint16(b, uint16(m.epoch))
	b = binary.BigEndian.AppendUint32(b, uint32(m.coordEpoch))
	c := byte(0)
	if m.commit {
		c = 1
	}
	b = append(b, c)
	return binary.BigEndian.AppendUint64(b, m.from)
}

func parseMarkRequest(b []byte) (markRequest, bool) {
	if len(b) != markRequestLen || b[0] != 1 || b[7] > 1 {
		return markRequest{}, false
	}
	return markRequest{
		epoch:      int16(binary.BigEndian.Uint16(b[1:])),
		coordEpoch: int32(binary.BigEndian.Uint32(b[3:])),
		commit:     b[7] == 1,
		from:       binary.BigEndian.Uint64(b[8:]),
	}, true
}

// markKey names the request of pid's marker on p. Kafka topic names hold
// no '/', so the key splits back unambiguously.
func markKey(p txn.Partition, pid int64) string {
	return txnMarkPrefix + p.Topic + "/" + strconv.Itoa(int(p.Partition)) + "/" + strconv.FormatInt(pid, 10)
}

func parseMarkKey(key string) (txn.Partition, int64, bool) {
	rest, ok := strings.CutPrefix(key, txnMarkPrefix)
	if !ok {
		return txn.Partition{}, 0, false
	}
	i := strings.LastIndexByte(rest, '/')
	if i <= 0 {
		return txn.Partition{}, 0, false
	}
	pid, err := strconv.ParseInt(rest[i+1:], 10, 64)
	rest = rest[:i]
	j := strings.LastIndexByte(rest, '/')
	if err != nil || j <= 0 {
		return txn.Partition{}, 0, false
	}
	part, err := strconv.ParseInt(rest[j+1:], 10, 32)
	if err != nil || part < 0 {
		return txn.Partition{}, 0, false
	}
	return txn.Partition{Topic: rest[:j], Partition: int32(part)}, pid, true
}

// markWait bounds how long a coordinator waits for a leader's marker; the
// transaction then stays prepared and is finished by the client's retried
// EndTxn or the coordinator's timeout loop.
const markWait = 10 * time.Second

// MarkElsewhere implements txn.RemoteMarker: in cluster mode, the markers
// of partitions other gateways lead are posted for them in one etcd
// transaction, and awaited together.
func (e txnEnv) MarkElsewhere(ctx context.Context, marks []txn.RemoteMark) ([]bool, error) {
	handled := make([]bool, len(marks))
	n := e.g.Cfg.Cluster
	if n == nil {
		return handled, nil
	}
	v := n.View()
	var posts []cluster.StateEntry
	for i, m := range marks {
		if v.Leader(m.P.Topic, m.P.Partition) == v.Self {
			continue
		}
		handled[i] = true
		r := markRequest{epoch: m.Epoch, coordEpoch: m.CoordEpoch, commit: m.Commit, from: m.From}
		posts = append(posts, cluster.StateEntry{Key: markKey(m.P, m.PID), Value: r.encode()})
	}
	if len(posts) == 0 {
		return handled, nil
	}
	if err := n.PutStates(ctx, posts); err != nil {
		if errors.Is(err, cluster.ErrStateConflict) {
			return nil, kerr.NotCoordinator // this gateway's session is gone
		}
		return nil, err
	}
	err := awaitEtcd(ctx, func(ctx context.Context) bool {
		left := posts[:0]
		for _, p := range posts {
			if v, _, err := n.GetState(ctx, p.Key); err != nil || v != nil {
				left = append(left, p) // not written yet
			}
		}
		posts = left
		return len(posts) == 0
	})
	if err != nil {
		return nil, fmt.Errorf("the leaders did not write %d markers (first %s): %w", len(posts), posts[0].Key, err)
	}
	return handled, nil
}

// awaitEtcd calls done, after a pause growing from 1 to 20 ms, until it
// reports true (nil) or markWait has passed or ctx ended (the context's
// error). done reads etcd with the context it is given. Any goroutine.
func awaitEtcd(ctx context.Context, done func(ctx context.Context) bool) error {
	ctx, cancel := context.WithTimeout(ctx, markWait)
	defer cancel()
	for pause := time.Millisecond; ; pause = min(2*pause, 20*time.Millisecond) {
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		if done(ctx) {
			return nil
		}
	}
}

// txnMarks is the leader's side: it serves the marker requests of the
// partitions this gateway leads. Its own goroutine (runTxnMarks).
type txnMarks struct {
	g *Gateway
	n *cluster.Node
	// since is, per partition this gateway serves, the etcd revision of
	// the first scan that found it served here: a request older than
	// that may have been written by the partition's previous leader, so
	// the marker is looked for in the log before it is written.
	mu    sync.Mutex
	since map[txn.Partition]int64
}

// runTxnMarks serves marker requests and relayed TxnOffsetCommits until
// ctx ends: at every change under their prefixes, and every second (for
// partitions and ids gained since).
func (g *Gateway) runTxnMarks(ctx context.Context, n *cluster.Node) {
	tm := &txnMarks{g: g, n: n, since: map[txn.Partition]int64{}}
	kick := make(chan struct{}, 1)
	wake := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	go n.WatchState(ctx, txnMarkPrefix, wake)
	go n.WatchState(ctx, txnOffsPrefix, wake)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick:
		case <-tick.C:
		}
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		tm.serve(sctx)
		tm.serveOffsets(sctx)
		cancel()
	}
}

// serve writes the marker of every request for a partition served here,
// then deletes the request. A request that fails stays for the next scan.
func (tm *txnMarks) serve(ctx context.Context) {
	type req struct {
		key string
		p   txn.Partition
		pid int64
		m   markRequest
		rev int64
	}
	var reqs []req
	at, err := tm.n.ScanStateAt(ctx, txnMarkPrefix, func(key string, v []byte, rev int64) {
		p, pid, ok := parseMarkKey(key)
		m, ok2 := parseMarkRequest(v)
		if !ok || !ok2 {
			tm.g.Log.Warn("cluster: an unreadable transaction marker request, skipped", "key", key)
			return
		}
		reqs = append(reqs, req{key, p, pid, m, rev})
	})
	if err != nil {
		tm.g.Log.Warn("cluster: reading the transaction marker requests failed; retried", "err", err)
		return
	}
	tm.mu.Lock()
	for p := range tm.since {
		if !tm.n.Serves(p.Topic, p.Partition) {
			delete(tm.since, p)
		}
	}
	tm.mu.Unlock()
	for _, r := range reqs {
		if !tm.n.Serves(r.p.Topic, r.p.Partition) {
			continue
		}
		tm.mu.Lock()
		since, ok := tm.since[r.p]
		if !ok {
			since = at
			tm.since[r.p] = at
		}
		tm.mu.Unlock()
		if err := tm.write(ctx, r.p, r.pid, r.m, r.rev <= since); err != nil {
			tm.g.Log.Debug("cluster: writing a transaction marker failed; retried", "topic", r.p.Topic,
				"partition", r.p.Partition, "producer_id", r.pid, "err", err)
			continue
		}
		if _, err := tm.n.PutState(ctx, r.key, nil, r.rev); err != nil && !errors.Is(err, cluster.ErrStateConflict) {
			tm.g.Log.Debug("cluster: deleting a served marker request failed; retried", "key", r.key, "err", err)
		}
	}
}

// write writes one requested marker; look: the request may predate this
// gateway's leadership, so a marker already in the log from m.from on is
// taken as written.
func (tm *txnMarks) write(ctx context.Context, p txn.Partition, pid int64, m markRequest, look bool) error {
	co := tm.g.Txn
	if look {
		off, _, found, err := txnEnv{tm.g}.FindMarker(ctx, p, m.from, pid, m.epoch)
		if err != nil {
			return err
		}
		if found {
			return co.Marked(ctx, p, pid, off, m.commit)
		}
	}
	err := co.WriteMarker(ctx, p, pid, m.epoch, m.coordEpoch, m.commit)
	if errors.Is(err, kerr.TransactionCoordinatorFenced) {
		// A later coordinator marked this producer here already: the
		// request is stale, and nothing is left to write.
		tm.g.Log.Warn("cluster: a marker request of a fenced coordinator dropped", "topic", p.Topic,
			"partition", p.Partition, "producer_id", pid, "coordinator_epoch", m.coordEpoch)
		return nil
	}
	return err
}

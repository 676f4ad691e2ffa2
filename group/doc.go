// Package group is the gateway's consumer-group coordinator: the classic
// protocol's state machine (JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
// generations, rebalance and session timers, static membership), the
// consumer protocol of KIP-848 (ConsumerGroupHeartbeat and
// ConsumerGroupDescribe: server-side assignors, member and group epochs,
// target assignment, reconciliation; consumer.go), the streams groups of
// KIP-1071 (StreamsGroupHeartbeat and StreamsGroupDescribe: the app's
// topology, internal topics, the sticky task assignor; streams*.go; the
// consumer and streams members share member_core.go) and the group
// operations over committed offsets (OffsetCommit, OffsetFetch,
// OffsetDelete, DescribeGroups, ListGroups, DeleteGroups). A group speaks
// one protocol at a time (group.consumer set or not); an empty group may
// switch. The handlers of
// those keys decode a request, call the one Coordinator method of its
// operation and encode what it returns; the behaviour each key shows a
// client is written at the top of its handlers/NN_*.go file and in
// docs/CONSUMER_GROUPS.md.
//
// Membership is soft state in this process. Committed offsets live in the
// Store (bridge.GroupOffsets), so they survive a restart and are shared by
// every gateway on the same Iggy.
//
// # The interface
//
// New builds a Coordinator over a Store, a stream and a Wake hook. Its
// exported methods are the whole interface: Join, Sync and Collect (the
// two calls that can wait), Heartbeat, Leave, ConsumerHeartbeat,
// ConsumerDescribe, CommitOffsets, FetchOffsets, DeleteOffsets, Describe,
// List, Delete, and Close. Each takes the decoded
// kmsg request and returns the response to encode; it never keeps a
// reference into the request (what it stores is copied), so the caller
// may return the request's buffer to its pool afterwards. It imports
// bridge and codec below it and knows nothing of the loop or of handlers.
//
// # Waiting without blocking
//
// A JoinGroup that must wait for the barrier, or a follower's SyncGroup
// that must wait for the leader, is not answered at once: Join and Sync
// return a Wait (a Ticket and a deadline). The caller parks its call (the
// worker goes back to the pool) and, when Wake(Ticket) fires or the
// deadline passes, runs it again and calls Collect, which returns the
// stored answer, asks it to park again, or (final run) gives the wait up
// with REBALANCE_IN_PROGRESS so the client rejoins. The coordinator settles
// every ticket before its deadline by its own timers; the deadline (the
// rebalance deadline plus 5 s) is a backstop.
//
// # Concurrency
//
//   - Callers: the loop's workers call every operation (none runs inline
//     on an event loop, because each takes the lock and some call the
//     store). The coordinator's own goroutines are time.AfterFunc timers:
//     one per member (session), one per group (initial delay, rebalance or
//     pending-sync deadline; generation-checked, so a stale fire does
//     nothing), one per outstanding KIP-394 member id, and the short
//     re-wake timers of a settled ticket.
//   - Locking: one mutex (co.mu) guards all membership state. It is held
//     only for in-memory work, never across a store call, a Wake or any
//     other blocking step. Functions that say "co.mu is held" run only
//     under it; the timer callbacks take it first.
//   - Wake runs after co.mu is released, on the goroutine that settled the
//     ticket (a worker or a timer), and must not block. If no call is
//     parked on the ticket yet (the worker returned but the loop has not
//     registered the watch), Wake reports false and the coordinator calls
//     it again after 1, 4, 16 ... ms while the answer lies uncollected.
//   - What may block: only the offset and admin operations,
//     ConsumerHeartbeat and StreamsHeartbeat (which also writes the
//     group's kept state, Options.StreamsState, under persistMu, taken
//     before co.mu), in their Store calls (CommitOffset/CommitOffsets,
//     FetchOffset, GroupOffsets, OffsetGroups, DeleteOffset,
//     DeleteGroupOffsets, Topic, Topics), always
//     without co.mu. They run under the caller's ctx (the loop's, ended at
//     shutdown); each Iggy request is bounded by the store's call timeout
//     (--iggy-call-timeout-ms) and a group-log catch-up by 30 s, and the
//     embedded store answers from local disk. A deadline or cancellation is
//     REQUEST_TIMED_OUT, an unavailable store COORDINATOR_NOT_AVAILABLE.
//   - The consumer protocol's timers (a session timer per member, a
//     rebalance timer per member that has partitions to revoke) come from
//     Options.Clock and are token-checked, so a stale fire does nothing.
//     ConsumerHeartbeat lists the stream's topics (Store.Topics, at most
//     every MetadataMaxAge) before it takes co.mu; the snapshot has its
//     own mutex (co.metaMu), taken after co.mu when both are held.
//   - Close stops every timer; call it after the loop drained.
package group

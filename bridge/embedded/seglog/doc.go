// Package seglog is the embedded store's data log: one append-only log of
// stamped Iggy batches per partition, cut into segment files. Only
// bridge/embedded imports it; docs/STORAGE.md describes what the store
// promises on top of it.
//
// # Layout
//
// A partition's directory holds segment files named by the offset of their
// first batch, zero-padded (00000000000000001234.log), each holding stamped
// Iggy batches back to back in offset order. A batch is self-delimiting (its
// Length at byte 32 of its 256-byte header) and self-checking (an xxh3
// checksum per message and one over the header fields and the message
// checksums), so the file needs no framing or checksum of its own.
//
// A segment that rolled (it reached the topic's segment.bytes) is sealed:
// never written again, and it has an index file beside it
// (00000000000000001234.index, index.go) with its sparse offset index, its
// size, its end offset and its newest record time, written and synced when it
// rolled. Clean Close writes one for the active segment too.
//
// # Positions
//
// Every byte of a partition's log has a logical position: a segment's byte
// i is at segment.startPos+i, and positions only grow (deleting segments
// does not renumber the rest). The visible watermark is the pair (offset,
// position) of the end of the batches readers may see; a reader never reads
// a byte at or past the visible position, so it never sees a batch being
// written. Under VisibleOnSync (the store's SyncAlways) the pair moves only
// over bytes known durable.
//
// # Concurrency
//
// Appends, rolls and start changes hold Log.mu; a write syscall is made
// under it, so file order is offset order and no reservation queue is
// needed. Durability waits (sync.go) hold no lock across the fsync: one
// waiter leads, syncs the active segment and wakes every waiter whose bytes
// it covered (group commit). Readers take no lock: they load the segment
// list (copy on write), pin a segment with a reference count and read with
// pread, bounded by the visible position. Every method may be called from
// any goroutine.
package seglog

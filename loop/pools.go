package loop

import "github.com/valyala/bytebufferpool"

// Two pools because bytebufferpool calibrates one size class per pool and
// drops buffers above it: small replies (metadata, api versions, produce
// acks) would otherwise evict the MiB-sized produce/fetch buffers.
var (
	smallBufs bytebufferpool.Pool // replies of cheap keys
	largeBufs bytebufferpool.Pool // request copies handed to workers, fetch replies
)

package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestInitProducerIDQueued: the loop's peek at an InitProducerId body
// sends exactly the ones with a non-empty transactional id to a worker,
// at every version's string encoding.
func TestInitProducerIDQueued(t *testing.T) {
	t.Parallel()
	for v := int16(0); v <= 5; v++ {
		for _, tc := range []struct {
			id   *string
			want bool
		}{{nil, false}, {strp(""), false}, {strp("t"), true}, {strp(string(make([]byte, 300))), true}} {
			req := kmsg.NewPtrInitProducerIDRequest()
			req.Version = v
			req.TransactionalID = tc.id
			req.TransactionTimeoutMillis = 60000
			body := req.AppendTo(nil)
			if got := initProducerIDTransactional(body, v); got != tc.want {
				t.Errorf("v%d id %v: queued %v, want %v", v, tc.id, got, tc.want)
			}
		}
	}
	if initProducerIDTransactional(nil, 0) || initProducerIDTransactional(nil, 3) {
		t.Error("an empty body queued")
	}
}

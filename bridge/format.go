package bridge

import "github.com/iggy-kafka/gateway/codec"

// BatchFormat is how a backend keeps record batches: Encode turns a Kafka
// batch a producer sent into the bytes Append takes, and AppendKafka turns
// a batch Poll yields back into a Kafka v2 batch. Handlers call only these
// two, so which form the data rests in is the backend's business. Both
// backends keep Iggy batches (IggyFormat), so native Iggy clients read what
// Kafka producers wrote; a backend nothing reads natively may keep the
// producer's batches as they came. Methods are pure: any goroutine.
type BatchFormat interface {
	// Encode appends to dst the stored form of the Kafka batch rb, whose
	// uncompressed records section is records, each record at most
	// maxMessage bytes once stored. On error dst is returned unchanged;
	// errors wrap ErrRecordInvalid or ErrRecordTooLarge. rb comes by value:
	// a pointer through an interface call would move the caller's batch
	// header to the heap, an allocation per Produce.
	Encode(dst []byte, rb codec.RecordBatch, records []byte, maxMessage int) ([]byte, ProduceStats, error)
	// EncodeMarker appends to dst the stored form of the transaction
	// marker m (a Kafka control batch of one record), which AppendKafka
	// reads back as that control batch. Errors are EncodeMarker's.
	EncodeMarker(dst []byte, m Marker) ([]byte, ProduceStats, error)
	// AppendKafka appends to dst one Kafka v2 batch of the records of the
	// stored batch at offsets >= cur.From, within cur's budget, and
	// returns what the stored batch holds, so the caller need not parse
	// it again. Errors are AppendKafkaBatch's.
	AppendKafka(dst, stored []byte, cur *FetchCursor) ([]byte, StoredBatch, error)
}

// StoredBatch is what a stored batch holds: Count messages from offset
// Base.
type StoredBatch struct {
	Base  uint64
	Count uint32
}

// End is one past the batch's last offset.
func (b StoredBatch) End() uint64 { return b.Base + uint64(b.Count) }

// IggyFormat keeps each Kafka record as one Iggy message (mapping.go,
// docs/MAPPING.md).
var IggyFormat BatchFormat = iggyFormat{}

type iggyFormat struct{}

func (iggyFormat) Encode(dst []byte, rb codec.RecordBatch, records []byte, maxMessage int) ([]byte, ProduceStats, error) {
	return EncodeKafkaRecords(dst, &rb, records, maxMessage)
}

func (iggyFormat) EncodeMarker(dst []byte, m Marker) ([]byte, ProduceStats, error) {
	return EncodeMarker(dst, m)
}

func (iggyFormat) AppendKafka(dst, stored []byte, cur *FetchCursor) ([]byte, StoredBatch, error) {
	dst, v, err := appendKafkaBatch(dst, stored, cur)
	return dst, StoredBatch{Base: v.BaseOffset, Count: v.Count}, err
}

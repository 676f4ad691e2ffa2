package handlers

import "github.com/iggy-kafka/gateway/codec"

// produceAcksZero is Produce's Spec.NoReply: an acks=0 request gets no
// reply. It reads acks from the undecoded body, so the loop decides
// before it copies the frame whether the request takes a place in the
// reply order. A body too short to say is answered (and its decode
// fails). Loop only (peeked bytes); no allocation.
func produceAcksZero(body []byte, version int16) bool {
	acks, ok := codec.ProduceAcks(body, version)
	return ok && acks == 0
}

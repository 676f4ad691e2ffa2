package cluster

import (
	"math"
	"sort"

	"github.com/zeebo/xxh3"
)

// Endpoint is where one listener of a member is reached.
type Endpoint struct {
	Host string `json:"host"`
	Port int32  `json:"port"`
}

// Member is one live gateway as it registered itself: its node id (the
// Kafka broker id, equal to its --instance-id) and the advertised address
// of each of its listeners, by listener name.
type Member struct {
	ID        int32               `json:"id"`
	Listeners map[string]Endpoint `json:"listeners"`
	// session is the etcd create revision of the member's key: a gateway
	// that re-registers is a new session, so a view with it is a new view.
	session int64
}

// View is one membership: who is live, as of an etcd revision. A View is
// never changed once built; any goroutine may read it.
type View struct {
	// Rev is the etcd revision the membership was read at; 0 for the
	// one-node cluster of a gateway without etcd. It only grows, on every
	// gateway, so it is the leader epoch of every partition (KIP-320): a
	// partition's epoch increases on each move, and on other membership
	// changes too, which clients accept.
	Rev     int64
	Self    int32
	Members []Member // sorted by ID, unique
	// id names the member set (ids and sessions): every member that
	// applied the same membership computes the same id, however it
	// learned it, which is what acknowledgements compare.
	id  uint64
	ids []int32 // the members' ids, in Members order
}

// newView sorts ms by id; ms is owned by the view from here on.
func newView(rev int64, self int32, ms []Member) *View {
	sort.Slice(ms, func(i, j int) bool { return ms[i].ID < ms[j].ID })
	id := uint64(len(ms))
	ids := make([]int32, len(ms))
	for i, m := range ms {
		id = mix(id ^ mix(uint64(uint32(m.ID))<<32^uint64(m.session)))
		ids[i] = m.ID
	}
	return &View{Rev: rev, Self: self, Members: ms, id: id, ids: ids}
}

// Epoch is Rev as a Kafka leader epoch (int32, saturating: an etcd past
// 2^31 revisions keeps answering the largest epoch, which clients accept).
func (v *View) Epoch() int32 {
	if v.Rev > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(v.Rev)
}

// IDs are the live members' ids, ascending. Shared: read only.
func (v *View) IDs() []int32 { return v.ids }

// Member returns the member with id, if live in this view.
func (v *View) Member(id int32) (*Member, bool) {
	i := sort.Search(len(v.Members), func(i int) bool { return v.Members[i].ID >= id })
	if i < len(v.Members) && v.Members[i].ID == id {
		return &v.Members[i], true
	}
	return nil, false
}

// Has reports whether id is live in this view.
func (v *View) Has(id int32) bool {
	_, ok := v.Member(id)
	return ok
}

// Controller is the member Metadata names as controller: the lowest id.
func (v *View) Controller() int32 {
	if len(v.Members) == 0 {
		return -1
	}
	return v.Members[0].ID
}

// Leader is the member that leads (writes and serves fetches of) one
// partition: rendezvous hashing over the live members, so each member
// leads about the same share and a membership change moves only the
// partitions of the member that came or went. -1 in an empty view.
// Allocation-free; any goroutine.
func (v *View) Leader(topic string, partition int32) int32 {
	return v.pick(mix(xxh3.HashString(topic) ^ mix(uint64(uint32(partition))+1)))
}

// Coordinator is the member that coordinates one consumer group, chosen
// as Leader chooses (from a different key space, so a group and a
// partition with one name do not land together by construction).
func (v *View) Coordinator(group string) int32 {
	return v.pick(mix(xxh3.HashString(group) ^ 0x9e3779b97f4a7c15))
}

// pick returns the member with the highest score for key (rendezvous).
func (v *View) pick(key uint64) int32 {
	best, bestScore := int32(-1), uint64(0)
	for i := range v.Members {
		id := v.Members[i].ID
		s := mix(key ^ mix(uint64(uint32(id))))
		if best < 0 || s > bestScore {
			best, bestScore = id, s
		}
	}
	return best
}

// mix is splitmix64's finalizer: a bijection that spreads every input bit.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

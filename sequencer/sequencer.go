package sequencer

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedb/sluice/internal/bugs"
	"github.com/sluicedb/sluice/sequencer/group"
)

// Config configures a sequencer incarnation.
type Config struct {
	// Writer names this incarnation uniquely (the driver adds a random
	// nonce); it is written into every entry so that ambiguous appends can
	// be told apart from another sequencer's.
	Writer string
	// Addr is where agents reach this sequencer; recorded in the epoch entry.
	Addr string
	// SnapshotEvery is how many entries pass between snapshots.
	SnapshotEvery uint64
	// EntryRequestsMax bounds how many requests one entry decides.
	EntryRequestsMax int
	// Groups configures the consumer-group coordinator.
	Groups group.Config
	// ProbeEvery is how long an idle active sequencer waits before it reads
	// the next log index to learn whether another sequencer took over.
	// Without it, a deposed sequencer with no writes to make would go on
	// sending heartbeats, and the agents following it would never look
	// for the new one.
	ProbeEvery time.Duration
}

const (
	defaultSnapshotEvery    = 1000
	defaultEntryRequestsMax = 4096
	defaultProbeEvery       = 500 * time.Millisecond
)

type role int

const (
	roleRecovering role = iota // replaying the log; Step is not allowed
	roleActivating             // the epoch entry is being appended; requests queue
	roleActive
	roleFenced // another sequencer appended: reject everything, forever
)

// Sequencer is the single ordering point: a sans-I/O state machine. The driver
// feeds it requests (Step) and storage completions (AppendDone, VerifyDone)
// and carries out what Ready returns. It reads no clock and does no I/O.
//
// At most one log entry is in flight. Requests that arrive meanwhile queue
// and are decided together into the next entry (group commit). Deciding a
// request applies its ops to the state at once ("speculatively"); this is
// safe because an in-flight entry has only two fates: it becomes durable
// (perhaps after retries), or the sequencer is fenced and its state is thrown
// away. Replies are released only when their entry is durable.
//
// Sequencer is not safe for concurrent use.
type Sequencer struct {
	cfg      Config
	state    *State
	role     role
	queue    []Request
	inflight *inflight
	ready    Ready
	lastSnap uint64 // index of the newest snapshot written or restored
	now      time.Time
	groups   *group.Coordinator
	// commitChecks is the membership verdict each queued OffsetCommit got
	// when it arrived, by request id (see Step).
	commitChecks map[uint64]int16
	// lastWrite is when the last entry became durable or the last probe
	// ended; probing is set while a probe is out.
	lastWrite time.Time
	probing   bool
}

// inflight is the entry being appended and the replies waiting on it.
type inflight struct {
	index   uint64
	entry   *Entry
	data    []byte
	replies []Reply
}

// LogWrite is an object the driver must create with if-absent semantics.
type LogWrite struct {
	Index uint64
	Data  []byte
}

// Update is a durable entry, to be applied by every agent replica in order.
type Update struct {
	Index uint64
	Entry *Entry
	Data  []byte
}

// Ready is what the driver must do next. Its rules:
//   - Append must be written as LogKey(Append.Index) with if-absent, and the
//     outcome reported with AppendDone. Verify asks the driver to read back
//     LogKey(Verify) after an ambiguous append and report VerifyDone.
//   - Replies may be sent at once: each one's entry is already durable.
//     Nothing is ever acknowledged before its entry is durable.
//   - Updates must reach agent replicas in order.
//   - Snapshot is written best effort as SnapKey(Snapshot.Index).
//   - Probe asks the driver to read LogKey(Probe) and report ProbeDone: an
//     idle sequencer checks that nobody else appended.
//   - Fenced means another sequencer took over: the driver stops this one.
type Ready struct {
	Append   *LogWrite
	Verify   uint64
	Probe    uint64
	Replies  []Reply
	Updates  []Update
	Snapshot *LogWrite
	Fenced   bool
}

// New returns a sequencer that must be recovered (Restore, Replay) and then
// Activated before it takes requests.
func New(cfg Config) *Sequencer {
	if cfg.SnapshotEvery == 0 {
		cfg.SnapshotEvery = defaultSnapshotEvery
	}
	if cfg.EntryRequestsMax <= 0 {
		cfg.EntryRequestsMax = defaultEntryRequestsMax
	}
	if cfg.ProbeEvery <= 0 {
		cfg.ProbeEvery = defaultProbeEvery
	}
	if cfg.Groups.NewMemberID == nil {
		// Member ids must not repeat across sequencer incarnations: a
		// zombie member of the last one must not pass for a new member.
		var n uint64
		cfg.Groups.NewMemberID = func(clientID string) string {
			n++
			return fmt.Sprintf("%s-%s-%d", clientID, cfg.Writer, n)
		}
	}
	return &Sequencer{cfg: cfg, state: NewState(), groups: group.New(cfg.Groups)}
}

// Restore starts recovery from a snapshot.
func (s *Sequencer) Restore(st *State) {
	s.mustBe(roleRecovering)
	s.state = st
	s.lastSnap = st.Index
}

// Replay applies the durable entry index found in the log.
func (s *Sequencer) Replay(index uint64, data []byte) error {
	s.mustBe(roleRecovering)
	if bugs.On(bugs.IgnoreLogAfterSnapshot) && s.lastSnap > 0 {
		s.state.Index = index // planted: the log after the snapshot is skipped
		return nil
	}
	e, err := UnmarshalEntry(data)
	if err != nil {
		return err
	}
	return s.state.Apply(index, e)
}

// Activate ends recovery: the sequencer appends its epoch entry next, and
// serves requests once that entry is durable.
func (s *Sequencer) Activate() {
	s.mustBe(roleRecovering)
	s.role = roleActivating
	op := Op{Epoch: &EpochOp{Epoch: s.state.Epoch.Epoch + 1, Owner: s.cfg.Writer, Addr: s.cfg.Addr}}
	s.startEntry([]Op{op}, nil)
}

// Active reports whether the sequencer has taken over and is not fenced.
func (s *Sequencer) Active() bool { return s.role == roleActive }

// Activated reports whether recovery has ended (Step may be called).
func (s *Sequencer) Activated() bool { return s.role != roleRecovering }

// Fenced reports whether another sequencer took over.
func (s *Sequencer) Fenced() bool { return s.role == roleFenced }

// State returns the state. With an entry in flight it includes that entry's
// ops; callers must not modify it.
func (s *Sequencer) State() *State { return s.state }

// InFlight reports whether an entry is being appended. Without one, State
// is exactly the durable state.
func (s *Sequencer) InFlight() bool { return s.inflight != nil }

// Idle reports whether no entry is in flight and no request is queued, so
// that State is exactly the durable state.
func (s *Sequencer) Idle() bool { return s.inflight == nil && len(s.queue) == 0 }

func (s *Sequencer) mustBe(r role) {
	if s.role != r {
		panic(fmt.Sprintf("sequencer: in role %d, want %d", s.role, r))
	}
}

// Step takes a request. Its reply comes out of a later Ready.
func (s *Sequencer) Step(req Request) {
	switch s.role {
	case roleRecovering:
		panic("sequencer: Step before Activate")
	case roleFenced:
		s.ready.Replies = append(s.ready.Replies, errorReply(req, kerr.NotCoordinator.Code))
		return
	}
	if isGroupRequest(req.Body) {
		if s.role != roleActive {
			s.ready.Replies = append(s.ready.Replies, errorReply(req, kerr.CoordinatorLoadInProgress.Code))
			return
		}
		if s.stepMembership(req) {
			return
		}
		if oc, ok := req.Body.(*kmsg.OffsetCommitRequest); ok {
			// Kafka validates a commit against the group's membership when
			// it handles it, before the connection's next request, and
			// Step answers membership requests at once: so validate it now,
			// in arrival order with them. Only storing the offsets waits
			// for the next entry. Otherwise a LeaveGroup or JoinGroup
			// pipelined behind the commit would overtake it.
			if s.commitChecks == nil {
				s.commitChecks = map[uint64]int16{}
			}
			s.commitChecks[req.ID] = s.groups.CheckCommit(s.now, oc.Group, oc.Generation, oc.MemberID, oc.InstanceID)
		}
	}
	s.queue = append(s.queue, req)
}

// Ready returns what the driver must do and forgets it. If no entry is in
// flight it first decides the queued requests into a new entry.
func (s *Sequencer) Ready() Ready {
	if s.role == roleActive && s.inflight == nil && len(s.queue) > 0 {
		s.decideQueue()
	}
	rd := s.ready
	s.ready = Ready{}
	return rd
}

// AppendDone reports the outcome of writing entry index: nil, or an error
// (objectio.ErrExists or any other). An error is ambiguous, since the write
// may have happened, so the sequencer asks to read the entry back.
func (s *Sequencer) AppendDone(index uint64, err error) {
	f := s.inflight
	if f == nil || f.index != index || s.role == roleFenced {
		return // a stale completion
	}
	if err != nil {
		if bugs.On(bugs.AmbiguousAsFailed) {
			// Planted: assume nothing was written and append again at the
			// next index, without reading entry index back.
			f.index++
			s.state.Index = f.index
			s.ready.Append = &LogWrite{Index: f.index, Data: f.data}
			return
		}
		s.ready.Verify = index
		return
	}
	s.durable()
}

// VerifyDone reports the read-back of entry index: its bytes, or found=false
// when it does not exist. A failed read (readErr) is retried.
func (s *Sequencer) VerifyDone(index uint64, data []byte, found bool, readErr error) {
	f := s.inflight
	if f == nil || f.index != index || s.role == roleFenced {
		return
	}
	switch {
	case readErr != nil:
		s.ready.Verify = index
	case !found:
		s.ready.Append = &LogWrite{Index: f.index, Data: f.data}
	case bytes.Equal(data, f.data):
		s.durable() // our write happened after all
	case bugs.On(bugs.FencedKeepsAcking):
		s.durable() // planted: another sequencer's entry taken for ours
	default:
		s.fence()
	}
}

// durable completes the in-flight entry: release its replies, publish it,
// and take a snapshot when one is due. No entry is in flight afterwards, so
// the state is exactly the durable state.
func (s *Sequencer) durable() {
	f := s.inflight
	s.inflight = nil
	s.lastWrite = s.now
	if s.role == roleActivating {
		s.role = roleActive
	}
	s.release(f)
	s.ready.Updates = append(s.ready.Updates, Update{Index: f.index, Entry: f.entry, Data: f.data})
	if f.index-s.lastSnap >= s.cfg.SnapshotEvery {
		s.lastSnap = f.index
		s.ready.Snapshot = &LogWrite{Index: f.index, Data: s.state.Marshal()}
	}
}

// release sends the replies waiting on f.
func (s *Sequencer) release(f *inflight) {
	for _, r := range f.replies {
		r.Entry = f.index
		s.ready.Replies = append(s.ready.Replies, r)
	}
	f.replies = nil
}

// probe asks to read the next log index when the sequencer has been idle
// for ProbeEvery.
func (s *Sequencer) probe() {
	if s.role != roleActive || s.probing || s.inflight != nil || len(s.queue) > 0 {
		return
	}
	if s.lastWrite.IsZero() || s.now.Sub(s.lastWrite) < s.cfg.ProbeEvery {
		if s.lastWrite.IsZero() {
			s.lastWrite = s.now
		}
		return
	}
	s.probing = true
	s.ready.Probe = s.state.Index + 1
}

// ProbeDone reports the read of a probed index. An entry there that this
// sequencer did not write means another one took over: step down. If this
// sequencer appended meanwhile, the append path finds out on its own.
func (s *Sequencer) ProbeDone(index uint64, found bool, readErr error) {
	if !s.probing {
		return
	}
	s.probing = false
	s.lastWrite = s.now
	if readErr != nil || !found || s.role != roleActive || s.inflight != nil || index != s.state.Index+1 {
		return
	}
	s.fence()
}

// fence steps down for good: another sequencer owns the log now. Every
// request waiting here fails with a retriable error, so clients retry
// elsewhere; none of them was acknowledged.
func (s *Sequencer) fence() {
	s.role = roleFenced
	s.ready.Fenced = true
	if f := s.inflight; f != nil {
		for _, r := range f.replies {
			s.ready.Replies = append(s.ready.Replies, errorReplyFor(r, kerr.NotCoordinator.Code))
		}
		s.inflight = nil
	}
	for _, req := range s.queue {
		s.ready.Replies = append(s.ready.Replies, errorReply(req, kerr.NotCoordinator.Code))
	}
	s.queue = nil
	s.commitChecks = nil
}

// decideQueue decides up to EntryRequestsMax queued requests into one entry.
func (s *Sequencer) decideQueue() {
	n := min(len(s.queue), s.cfg.EntryRequestsMax)
	reqs := s.queue[:n]
	s.queue = append([]Request(nil), s.queue[n:]...)
	index := s.state.Index + 1
	var ops []Op
	replies := make([]Reply, 0, n)
	for _, req := range reqs {
		var body any
		if oc, ok := req.Body.(*kmsg.OffsetCommitRequest); ok {
			code, checked := s.commitChecks[req.ID]
			if !checked {
				panic(fmt.Sprintf("sequencer: OffsetCommit request %d queued without its membership check", req.ID))
			}
			delete(s.commitChecks, req.ID)
			body, ops = s.decideOffsetCommit(index, oc, code, ops)
		} else {
			body, ops = s.decide(index, req.Body, ops)
		}
		if _, commit := body.(*kmsg.OffsetCommitResponse); commit && bugs.On(bugs.CommitAckBeforeDurable) {
			s.ready.Replies = append(s.ready.Replies, Reply{ID: req.ID, Body: body, Entry: index}) // planted
			continue
		}
		replies = append(replies, Reply{ID: req.ID, Body: body})
	}
	if len(ops) == 0 {
		// Nothing changed: every reply rests on entries already durable
		// (no entry is in flight while deciding).
		for i := range replies {
			replies[i].Entry = s.state.Index
		}
		s.ready.Replies = append(s.ready.Replies, replies...)
		return
	}
	s.startEntry(ops, replies)
}

// startEntry applies ops to the state and starts appending them as the next
// entry.
func (s *Sequencer) startEntry(ops []Op, replies []Reply) {
	if s.inflight != nil {
		panic("sequencer: two entries in flight")
	}
	index := s.state.Index + 1
	e := &Entry{Writer: s.cfg.Writer, Ops: ops}
	// Ops decided by decide were applied as they were decided; the epoch op
	// is applied here. Apply the whole entry on a replica in tests to check
	// that the two paths agree.
	if s.role == roleActivating && ops[0].Epoch != nil {
		if err := s.state.applyOp(index, &ops[0]); err != nil {
			panic(fmt.Sprintf("sequencer: own epoch op rejected: %v", err))
		}
	}
	s.state.Index = index
	f := &inflight{index: index, entry: e, data: MarshalEntry(e), replies: replies}
	s.inflight = f
	s.ready.Append = &LogWrite{Index: index, Data: f.data}
	if bugs.On(bugs.AckBeforeDurable) {
		s.release(f)
	}
}

// decide validates one request against the state, applies the ops it makes,
// and returns its reply body and the grown op list.
func (s *Sequencer) decide(index uint64, body any, ops []Op) (any, []Op) {
	switch r := body.(type) {
	case *CommitRequest:
		return s.decideCommit(index, r, ops)
	case *CreateTopicRequest:
		return s.decideCreateTopic(index, r, ops)
	case *DeleteTopicRequest:
		return s.decideDeleteTopic(index, r, ops)
	case *CreatePartitionsRequest:
		return s.decideCreatePartitions(index, r, ops)
	case *InitProducerRequest:
		return s.decideInitProducer(index, ops)
	case *kmsg.OffsetFetchRequest:
		return s.decideOffsetFetch(r, ops)
	case *kmsg.DeleteGroupsRequest:
		return s.decideDeleteGroups(index, r, ops)
	case *kmsg.OffsetDeleteRequest:
		return s.decideOffsetDelete(index, r, ops)
	default:
		panic(fmt.Sprintf("sequencer: unknown request %T", body))
	}
}

// apply applies one decided op and appends it to ops. The op was validated,
// so a failure is a bug in decide.
func (s *Sequencer) apply(index uint64, op Op, ops []Op) []Op {
	if err := s.state.applyOp(index, &op); err != nil {
		panic(fmt.Sprintf("sequencer: decided op does not apply: %v", err))
	}
	return append(ops, op)
}

func (s *Sequencer) decideCommit(index uint64, c *CommitRequest, ops []Op) (any, []Op) {
	reply := &CommitReply{Results: make([]BatchResult, len(c.Batches))}
	for i := range c.Batches {
		b := &c.Batches[i]
		res := &reply.Results[i]
		p := s.state.Partition(b.Topic, b.Partition)
		if p == nil {
			res.Err = kerr.UnknownTopicOrPartition.Code
			continue
		}
		res.LogStart = p.LogStart
		if b.Records <= 0 || b.Len <= 0 {
			res.Err = kerr.CorruptMessage.Code
			continue
		}
		if b.ProducerID >= 0 {
			base, dup, code := s.checkSequence(p, b)
			if code != 0 || dup {
				res.Err, res.BaseOffset, res.Dup = code, base, dup
				continue
			}
		}
		res.BaseOffset = p.Next
		ops = s.apply(index, Op{Batch: &BatchOp{
			Topic: b.Topic, Partition: b.Partition, BaseOffset: p.Next, Records: b.Records,
			Object: c.Object, Pos: b.Pos, Len: b.Len, MaxTimestamp: b.MaxTimestamp,
			ProducerID: b.ProducerID, ProducerEpoch: b.ProducerEpoch, BaseSequence: b.BaseSequence,
		}}, ops)
	}
	return reply, ops
}

// checkSequence applies Kafka's idempotent-producer rules to a batch. A
// retried batch found among the producer's last five gets its original base
// offset back (dup); a gap is OUT_OF_ORDER_SEQUENCE_NUMBER; an old epoch is
// INVALID_PRODUCER_EPOCH.
func (s *Sequencer) checkSequence(p *Partition, b *BatchCommit) (base int64, dup bool, code int16) {
	if bugs.On(bugs.SkipIdempotence) {
		return 0, false, 0
	}
	current, known := s.state.ProducerEpochs[b.ProducerID]
	if !known {
		return 0, false, kerr.UnknownProducerID.Code
	}
	if b.ProducerEpoch < current {
		return 0, false, kerr.InvalidProducerEpoch.Code
	}
	w := p.Producers[b.ProducerID]
	if w == nil || w.Epoch != b.ProducerEpoch {
		if w != nil && b.ProducerEpoch < w.Epoch {
			return 0, false, kerr.InvalidProducerEpoch.Code
		}
		if b.BaseSequence != 0 {
			return 0, false, kerr.OutOfOrderSequenceNumber.Code
		}
		return 0, false, 0
	}
	last := addSeq(b.BaseSequence, b.Records-1)
	for _, r := range w.Batches {
		if r.First == b.BaseSequence && r.Last == last {
			return r.BaseOffset, true, 0
		}
	}
	if n := len(w.Batches); n > 0 && b.BaseSequence != addSeq(w.Batches[n-1].Last, 1) {
		return 0, false, kerr.OutOfOrderSequenceNumber.Code
	}
	return 0, false, 0
}

func (s *Sequencer) decideCreateTopic(index uint64, r *CreateTopicRequest, ops []Op) (any, []Op) {
	if msg := invalidTopicName(r.Name); msg != "" {
		return &TopicReply{Err: kerr.InvalidTopicException.Code, Message: msg}, ops
	}
	if s.state.Topics[r.Name] != nil {
		return &TopicReply{Err: kerr.TopicAlreadyExists.Code, Message: fmt.Sprintf("topic %q already exists", r.Name)}, ops
	}
	if r.Partitions <= 0 || r.Partitions > partitionsMax {
		return &TopicReply{Err: kerr.InvalidPartitions.Code, Message: fmt.Sprintf("partitions must be 1..%d", partitionsMax)}, ops
	}
	id := topicID(r.Name, index, s.cfg.Writer)
	if r.ValidateOnly {
		return &TopicReply{ID: id}, ops
	}
	return &TopicReply{ID: id}, s.apply(index, Op{CreateTopic: &CreateTopicOp{
		Name: r.Name, ID: id, Partitions: r.Partitions, Configs: r.Configs,
	}}, ops)
}

// partitionsMax bounds a topic's partition count.
const partitionsMax = 10000

func (s *Sequencer) decideDeleteTopic(index uint64, r *DeleteTopicRequest, ops []Op) (any, []Op) {
	t := s.state.Topics[r.Name]
	if t == nil {
		return &TopicReply{Err: kerr.UnknownTopicOrPartition.Code}, ops
	}
	return &TopicReply{ID: t.ID}, s.apply(index, Op{DeleteTopic: &DeleteTopicOp{Name: r.Name}}, ops)
}

func (s *Sequencer) decideCreatePartitions(index uint64, r *CreatePartitionsRequest, ops []Op) (any, []Op) {
	t := s.state.Topics[r.Name]
	if t == nil {
		return &TopicReply{Err: kerr.UnknownTopicOrPartition.Code}, ops
	}
	if int(r.Count) <= len(t.Partitions) || r.Count > partitionsMax {
		return &TopicReply{Err: kerr.InvalidPartitions.Code,
			Message: fmt.Sprintf("topic has %d partitions; the new count must be larger and at most %d", len(t.Partitions), partitionsMax)}, ops
	}
	if r.ValidateOnly {
		return &TopicReply{ID: t.ID}, ops
	}
	return &TopicReply{ID: t.ID}, s.apply(index, Op{CreatePartitions: &CreatePartitionsOp{Name: r.Name, Count: r.Count}}, ops)
}

// decideInitProducer hands out a fresh producer id with epoch 0, as Kafka
// does for a producer without a transactional id.
func (s *Sequencer) decideInitProducer(index uint64, ops []Op) (any, []Op) {
	id := s.state.NextProducerID
	return &InitProducerReply{ProducerID: id}, s.apply(index, Op{InitProducer: &InitProducerOp{ProducerID: id}}, ops)
}

// topicID derives a topic's UUID from facts every replay sees alike.
func topicID(name string, index uint64, writer string) [16]byte {
	h := sha256.New()
	h.Write([]byte(name))
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], index)
	h.Write(b[:])
	h.Write([]byte(writer))
	var id [16]byte
	copy(id[:], h.Sum(nil))
	id[6] = id[6]&0x0f | 0x40 // a version-4 shape, as Kafka's are random UUIDs
	id[8] = id[8]&0x3f | 0x80
	return id
}

// invalidTopicName applies Kafka's topic name rules.
func invalidTopicName(name string) string {
	switch {
	case name == "":
		return "topic name is empty"
	case name == "." || name == "..":
		return "topic name cannot be '.' or '..'"
	case len(name) > 249:
		return "topic name is longer than 249 characters"
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Sprintf("topic name %q has a character outside [a-zA-Z0-9._-]", name)
		}
	}
	return ""
}

// errorReply answers a request with a Kafka error code and nothing else.
func errorReply(req Request, code int16) Reply {
	switch r := req.Body.(type) {
	case *CommitRequest:
		res := make([]BatchResult, len(r.Batches))
		for i := range res {
			res[i].Err = code
		}
		return Reply{ID: req.ID, Body: &CommitReply{Results: res}}
	case *InitProducerRequest:
		return Reply{ID: req.ID, Body: &InitProducerReply{Err: code, ProducerID: -1, Epoch: -1}}
	case *JoinGroup:
		resp, _ := groupErrorResponse(r.Req, code)
		return Reply{ID: req.ID, Body: resp}
	case kmsg.Request:
		resp, _ := groupErrorResponse(r, code)
		return Reply{ID: req.ID, Body: resp}
	default:
		return Reply{ID: req.ID, Body: &TopicReply{Err: code}}
	}
}

// errorReplyFor turns a decided reply into an error of the same shape.
func errorReplyFor(r Reply, code int16) Reply {
	switch b := r.Body.(type) {
	case *CommitReply:
		return errorReply(Request{ID: r.ID, Body: &CommitRequest{Batches: make([]BatchCommit, len(b.Results))}}, code)
	case *InitProducerReply:
		return errorReply(Request{ID: r.ID, Body: &InitProducerRequest{}}, code)
	case kmsg.Response:
		// A group reply held for its entry; the client retries the request.
		req := kmsg.RequestForKey(b.Key())
		req.SetVersion(b.GetVersion())
		resp, _ := groupErrorResponse(req, code)
		return Reply{ID: r.ID, Body: resp}
	default:
		return errorReply(Request{ID: r.ID}, code)
	}
}

// ErrorReplyBody is the reply to a request body that failed with code, for
// drivers that must answer a request the sequencer never saw (its link to the
// agent broke, say).
func ErrorReplyBody(body any, code int16) any { return errorReply(Request{Body: body}, code).Body }

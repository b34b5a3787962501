package sequencer

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

var errPutFailed = errors.New("put failed")

// logStore is the metadata log as the object store holds it: if-absent
// creates only.
type logStore map[uint64][]byte

// driver runs a Sequencer against a logStore synchronously, so tests can
// step it and inject storage outcomes.
type driver struct {
	t       *testing.T
	seq     *Sequencer
	log     logStore
	replies map[uint64]any
	updates []Update
	snaps   map[uint64][]byte
	fenced  bool
	nextID  uint64

	// failAfter makes the next append happen but report an error;
	// failBefore makes it fail without happening.
	failAfter, failBefore int
}

func newDriver(t *testing.T, log logStore, writer string) *driver {
	t.Helper()
	d := &driver{t: t, log: log, replies: map[uint64]any{}, snaps: map[uint64][]byte{}}
	d.seq = New(Config{Writer: writer, SnapshotEvery: 4})
	for i := uint64(1); ; i++ {
		data, ok := log[i]
		if !ok {
			break
		}
		if err := d.seq.Replay(i, data); err != nil {
			t.Fatalf("replay %d: %v", i, err)
		}
	}
	d.seq.Activate()
	d.run()
	return d
}

func (d *driver) submit(body any) uint64 {
	d.nextID++
	d.seq.Step(Request{ID: d.nextID, Body: body})
	return d.nextID
}

// run carries out Ready until there is nothing left to do.
func (d *driver) run() {
	for i := 0; i < 1000; i++ {
		rd := d.seq.Ready()
		for _, r := range rd.Replies {
			d.replies[r.ID] = r.Body
		}
		d.updates = append(d.updates, rd.Updates...)
		if rd.Snapshot != nil {
			d.snaps[rd.Snapshot.Index] = rd.Snapshot.Data
		}
		d.fenced = d.fenced || rd.Fenced
		switch {
		case rd.Append != nil:
			d.append(rd.Append)
		case rd.Verify != 0:
			data, found := d.log[rd.Verify]
			d.seq.VerifyDone(rd.Verify, data, found, nil)
		default:
			return
		}
	}
	d.t.Fatal("sequencer did not settle in 1000 steps")
}

func (d *driver) append(w *LogWrite) {
	switch {
	case d.failBefore > 0:
		d.failBefore--
		d.seq.AppendDone(w.Index, errPutFailed)
	case d.log[w.Index] != nil:
		d.seq.AppendDone(w.Index, fmt.Errorf("exists"))
	case d.failAfter > 0:
		d.failAfter--
		d.log[w.Index] = bytes.Clone(w.Data)
		d.seq.AppendDone(w.Index, errPutFailed)
	default:
		d.log[w.Index] = bytes.Clone(w.Data)
		d.seq.AppendDone(w.Index, nil)
	}
}

func (d *driver) commit(id uint64) *CommitReply {
	d.t.Helper()
	r, ok := d.replies[id].(*CommitReply)
	if !ok {
		d.t.Fatalf("request %d: no commit reply (have %T)", id, d.replies[id])
	}
	return r
}

func (d *driver) mustCreateTopic(name string, parts int32) {
	d.t.Helper()
	id := d.submit(&CreateTopicRequest{Name: name, Partitions: parts})
	d.run()
	if r := d.replies[id].(*TopicReply); r.Err != 0 {
		d.t.Fatalf("create %s: error %d %s", name, r.Err, r.Message)
	}
}

func (d *driver) initProducer() int64 {
	d.t.Helper()
	id := d.submit(&InitProducerRequest{ProducerID: -1})
	d.run()
	return d.replies[id].(*InitProducerReply).ProducerID
}

func batch(topic string, p int32, records int32, pid int64, epoch int16, seq int32) BatchCommit {
	return BatchCommit{Topic: topic, Partition: p, Pos: 0, Len: 100, Records: records,
		ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq}
}

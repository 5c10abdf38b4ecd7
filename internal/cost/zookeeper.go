package cost

import (
	"encoding/binary"
	"net"
	"time"

	"github.com/seckill-lab/seckill/stock/catalog"
)

// The meter counts ZooKeeper's client with a wrapping dialer (ZooKeeperDialer) that reads the opcode
// of every request packet the client writes: create, delete, setData,
// multi and close are transactions (writes), ping is session upkeep.

// zkOps say, per ZooKeeper request opcode, in which phase a lock recipe
// sends it and whether it is a transaction (written to the transaction
// log, fsynced under forceSync). An opcode not listed is an Acquire read.
var zkOps = map[int32]struct {
	phase Phase
	write bool
}{
	1:   {Acquire, true}, // create
	2:   {Release, true}, // delete
	5:   {Other, true},   // setData
	7:   {Other, true},   // setACL
	11:  {Other, false},  // ping
	14:  {Acquire, true}, // multi
	15:  {Acquire, true}, // create2
	16:  {Other, true},   // reconfig
	19:  {Acquire, true}, // createContainer
	21:  {Acquire, true}, // createTTL
	-11: {Other, true},   // closeSession
	100: {Other, false},  // setAuth
	101: {Other, false},  // setWatches
}

// ZooKeeperDialer returns a go-zookeeper dialer (zk.WithDialer) whose
// connections count the requests written on them. next dials (nil: a
// net.DialTimeout).
func (m *Meter) ZooKeeperDialer(next func(network, address string, timeout time.Duration) (net.Conn, error)) func(network, address string, timeout time.Duration) (net.Conn, error) {
	if next == nil {
		next = net.DialTimeout
	}
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		c, err := next(network, address, timeout)
		if err != nil {
			return nil, err
		}
		return &zkConn{Conn: c, m: m}, nil
	}
}

// zkConn reads the request packets written on a ZooKeeper connection: a
// 4-byte length, then (after the first packet, the connect request) an
// 8-byte header of xid and opcode. A packet may span writes.
type zkConn struct {
	net.Conn
	m       *Meter
	started bool   // the connect request was read
	head    []byte // the bytes of the current packet's length and header so far
	skip    int    // bytes of the current packet's body still to pass
}

func (c *zkConn) Write(p []byte) (int, error) {
	// Counted before the bytes go out: once they are out, the answer can
	// come back, and the caller return, before this goroutine (go-zookeeper's
	// send loop) runs again (CI saw a create counted in the next request's
	// step). A write that fails broke the connection, whatever it counted.
	c.read(p)
	return c.Conn.Write(p)
}

func (c *zkConn) read(p []byte) {
	for len(p) > 0 {
		if c.skip > 0 {
			k := min(c.skip, len(p))
			c.skip -= k
			p = p[k:]
			continue
		}
		need := 12
		if !c.started {
			need = 4
		}
		k := min(need-len(c.head), len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
		if len(c.head) < need {
			return
		}
		size := int(binary.BigEndian.Uint32(c.head[:4]))
		if !c.started {
			// The connect request creates (or resumes) a session: a
			// transaction of session upkeep.
			c.started = true
			c.m.add(catalog.ServerZooKeeper, Other, op{write: true})
			c.skip = size
		} else {
			opcode := int32(binary.BigEndian.Uint32(c.head[8:12]))
			o, ok := zkOps[opcode]
			if !ok {
				o.phase = Acquire
			}
			c.m.add(catalog.ServerZooKeeper, o.phase, op{write: o.write})
			c.skip = size - 8
		}
		c.head = c.head[:0]
	}
}

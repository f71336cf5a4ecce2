package cluster

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/sluice-rl/sluice/internal/resp"
)

// Asking another node who its group's members are: RAFT.MEMBERS over a
// short-lived RESP connection. A node asks before it bootstraps (is a peer
// already in a group?), before it joins (which addresses will the leader
// connect from, and am I already a member?) and when its Raft port refused
// a connection (has the group added members this node has not heard of?).

// peerMember is one member as another node reported it.
type peerMember struct {
	ID       string
	RaftAddr string
	Role     string
}

// Limits of a RAFT.MEMBERS reply this node reads: far beyond any real
// group, small enough that a hostile peer cannot make it allocate much.
const (
	maxReportedMembers = 1024
	maxMemberField     = 1024
	askTimeout         = 2 * time.Second
)

// askMembers asks the node at respAddr for its configuration (empty: the
// node belongs to no group yet). It authenticates with password when one
// is set, and speaks TLS with cfg when it is not nil. The whole exchange is
// bounded by askTimeout.
func askMembers(respAddr, command, password string, cfg *tls.Config) ([]peerMember, error) {
	nc, err := dialTLS(net.Dialer{}, respAddr, cfg, askTimeout)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(askTimeout))
	var req []byte
	if password != "" {
		req = resp.AppendCommand(req, "AUTH", password)
	}
	req = resp.AppendCommand(req, command)
	if _, err := nc.Write(req); err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(nc, 4096)
	if password != "" {
		if _, err := readReply(br, new(resp.Value)); err != nil {
			return nil, fmt.Errorf("AUTH: %w", err)
		}
	}
	return readMembers(br)
}

// readMembers reads RAFT.MEMBERS's RESP2 reply: an array of members, each
// a flat array of name/value bulk strings. Unknown fields are ignored; an
// error reply is returned as a replyError.
func readMembers(br *bufio.Reader) ([]peerMember, error) {
	n, err := readArrayLen(br, maxReportedMembers)
	if err != nil {
		return nil, err
	}
	out := make([]peerMember, 0, n)
	for i := 0; i < n; i++ {
		fields, err := readArrayLen(br, 64)
		if err != nil {
			return nil, err
		}
		if fields%2 != 0 {
			return nil, errMembersReply
		}
		var m peerMember
		for j := 0; j < fields; j += 2 {
			name, err := readBulk(br)
			if err != nil {
				return nil, err
			}
			value, err := readBulk(br)
			if err != nil {
				return nil, err
			}
			switch name {
			case "id":
				m.ID = value
			case "raft_addr":
				m.RaftAddr = value
			case "role":
				m.Role = value
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// readLine reads one reply line of at most maxMemberField bytes and returns
// its type byte and body.
func readLine(br *bufio.Reader) (byte, string, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return 0, "", errMembersReply
		}
		return 0, "", err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return 0, "", errMembersReply
	}
	return line[0], string(line[1 : len(line)-2]), nil
}

func readArrayLen(br *bufio.Reader, max int) (int, error) {
	typ, body, err := readLine(br)
	if err != nil {
		return 0, err
	}
	switch typ {
	case '-':
		return 0, replyError(body)
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 || n > max {
			return 0, errMembersReply
		}
		return n, nil
	default:
		return 0, errMembersReply
	}
}

func readBulk(br *bufio.Reader) (string, error) {
	typ, body, err := readLine(br)
	if err != nil {
		return "", err
	}
	if typ != '$' {
		return "", errMembersReply
	}
	n, err := strconv.Atoi(body)
	if err != nil || n < 0 || n > maxMemberField {
		return "", errMembersReply
	}
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(br, buf); err != nil {
		return "", err
	}
	if buf[n] != '\r' || buf[n+1] != '\n' {
		return "", errMembersReply
	}
	return string(buf[:n]), nil
}

package cluster

import (
	"bufio"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// RAFT.MEMBERS replies as another node sends them (RESP2), and hostile ones.

// encodeMembers writes members the way cmdRaftMembers does in RESP2.
func encodeMembers(members []peerMember) []byte {
	b := []byte("*" + strconv.Itoa(len(members)) + "\r\n")
	for _, m := range members {
		b = append(b, "*6\r\n"...)
		for _, f := range []string{"id", m.ID, "raft_addr", m.RaftAddr, "role", m.Role} {
			b = append(b, "$"+strconv.Itoa(len(f))+"\r\n"+f+"\r\n"...)
		}
	}
	return b
}

func parseMembers(s string) ([]peerMember, error) {
	return readMembers(bufio.NewReaderSize(strings.NewReader(s), 4096))
}

func TestReadMembersReply(t *testing.T) {
	group := []peerMember{{"n1", "127.0.0.1:7381", "leader"}, {"n2", "10.0.0.2:7382", "follower"}}
	got, err := parseMembers(string(encodeMembers(group)))
	if err != nil || !reflect.DeepEqual(got, group) {
		t.Fatalf("read %v, %v; want %v", got, err, group)
	}
	if got, err := parseMembers("*0\r\n"); err != nil || len(got) != 0 {
		t.Fatalf("a node in no group: read %v, %v; want no members", got, err)
	}
	// A member with a field sluice does not know yet: ignored.
	extra := "*1\r\n*4\r\n$2\r\nid\r\n$2\r\nn9\r\n$4\r\nzone\r\n$1\r\na\r\n"
	if got, err := parseMembers(extra); err != nil || len(got) != 1 || got[0].ID != "n9" {
		t.Fatalf("read %v, %v; want n9", got, err)
	}
	var re replyError
	if _, err := parseMembers("-ERR This instance has cluster support disabled\r\n"); !errors.As(err, &re) {
		t.Fatalf("an error reply read as %v; want a replyError", err)
	}
	for _, bad := range []string{
		"",
		"+OK\r\n",
		"*1\r\n",
		"*-1\r\n",
		"*1025\r\n",
		"*1\r\n*3\r\n$2\r\nid\r\n$2\r\nn1\r\n$1\r\nx\r\n",
		"*1\r\n*2\r\n$2\r\nid\r\n$9999\r\nn1\r\n",
		"*1\r\n*2\r\n$2\r\nid\r\n$2\r\nn1xx",
		"*1\r\n*2\r\n:1\r\n:2\r\n",
		"*99999999999999999999\r\n",
		"*1\n",
		"*" + strings.Repeat("1", 5000) + "\r\n",
	} {
		if got, err := parseMembers(bad); err == nil {
			t.Errorf("%q read as %v; want an error", bad, got)
		}
	}
}

// FuzzReadMembers: any bytes read as members or an error, never a panic;
// what reads as members encodes back to an equivalent reply.
func FuzzReadMembers(f *testing.F) {
	f.Add(encodeMembers([]peerMember{{"n1", "127.0.0.1:7381", "leader"}, {"n2", "127.0.0.1:7382", "follower"}}))
	f.Add([]byte("*0\r\n"))
	f.Add([]byte("-NOAUTH Authentication required.\r\n"))
	f.Add([]byte("*1\r\n*2\r\n$2\r\nid\r\n$-1\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parseMembers(string(data))
		if err != nil {
			return
		}
		again, err := parseMembers(string(encodeMembers(got)))
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Fatalf("%q read as %v; its encoding reads as %v, %v", data, got, again, err)
		}
	})
}

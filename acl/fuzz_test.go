package acl

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// FuzzSetUserRules applies rules (one per line of the input) to a user:
// no panic, errors from the vocabulary only, and what ACL LIST shows, set
// again on a new user, is the same user (the property Redis asserts when
// it renders, and that ACL SAVE and replication rest on).
func FuzzSetUserRules(f *testing.F) {
	for _, s := range []string{
		"on\n>p\n~tenant-a:*\n+@limiter\n+@read",
		"+@all\n-@dangerous\n+client|kill\n-config|set",
		"%R~r:*\n%W~w:*\n%RW~x\n~\n%R",
		"+select|0\n+select|1\n-select\n+select|2",
		"reset\nskip-sanitize-payload\nnopass\n&c\nallchannels",
		"allkeys\n~x", "#abc", "<nope", "+client|kill|x", "(~x +get)", "+@", "-",
	} {
		f.Add(s)
	}
	reg := sluiceRegistry(f)
	f.Fuzz(func(t *testing.T, input string) {
		rules := strings.Split(input, "\n")
		if len(rules) > 64 {
			return
		}
		us := NewUsers(reg)
		err := us.SetUser("u", rules...)
		if err != nil {
			var re *RuleError
			if !errors.As(err, &re) {
				t.Fatalf("SetUser(%q): %v is not a RuleError", rules, err)
			}
			return
		}
		line := us.List()[1]
		again := NewUsers(reg)
		if err := again.SetUser("u", strings.Fields(strings.TrimPrefix(line, "user u "))...); err != nil {
			t.Fatalf("rules %q render as %q, which does not apply: %v", rules, line, err)
		}
		if got := again.List()[1]; got != line {
			t.Fatalf("rules %q render as\n %s\nwhich renders as\n %s", rules, line, got)
		}
		p, q := us.Get("u").st.cmds, again.Get("u").st.cmds
		if !p.sameBits(reg, &q) {
			t.Fatalf("rules %q: the rendered rules allow other commands", rules)
		}
	})
}

// FuzzLoadText loads arbitrary aclfile text: no panic; a refusal is a
// *LoadError and changes nothing; a success saves as text that loads back
// to the same text.
func FuzzLoadText(f *testing.F) {
	for _, s := range []string{
		"user default on nopass ~* &* +@all\nuser a on >p ~a:* +@read\n",
		"# comment\nuser\n", "user a  on\r\n", "user a on\nuser a off\n", "user a\tb on\n", "",
		"user a on (~x +get)\n", "user a on bogus +nosuch #abc\n",
	} {
		f.Add([]byte(s))
	}
	reg := sluiceRegistry(f)
	f.Fuzz(func(t *testing.T, text []byte) {
		if len(text) > 4096 {
			return
		}
		us := NewUsers(reg)
		before := us.List()
		if err := us.LoadText("fuzz.acl", text); err != nil {
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("LoadText: %v is not a LoadError", err)
			}
			if !slices.Equal(us.List(), before) {
				t.Fatal("a refused file changed the users")
			}
			return
		}
		saved := us.Text()
		again := NewUsers(reg)
		if err := again.LoadText("saved.acl", saved); err != nil {
			t.Fatalf("%q loads, but its saved form %q does not: %v", text, saved, err)
		}
		if string(again.Text()) != string(saved) {
			t.Fatalf("%q saves as\n%s\nwhich saves as\n%s", text, saved, again.Text())
		}
	})
}

// FuzzApplyChange applies replicated changes (one per line, words separated
// by spaces; "load" takes the rest of the input as the file's text) to two
// replicas: no panic, Check and Apply agree, a refused change leaves the
// users as they were, and both replicas always hold the same encoding.
func FuzzApplyChange(f *testing.F) {
	for _, s := range []string{
		"setuser a on >p ~a:* +@limiter\ndeluser a b\nsetuser b",
		"setuser default resetpass >pw\ndeluser default",
		"load f user default on nopass ~* +@all|user x on nopass +@read",
		"setuser a +nosuch\nsetuser a%b on\nflush",
		"deluser\nsetuser\nload",
	} {
		f.Add(s)
	}
	reg := sluiceRegistry(f)
	f.Fuzz(func(t *testing.T, input string) {
		lines := strings.Split(input, "\n")
		if len(lines) > 32 {
			return
		}
		a, b := NewUsers(reg), NewUsers(reg)
		for _, line := range lines {
			var change [][]byte
			if rest, ok := strings.CutPrefix(line, "load "); ok {
				name, text, _ := strings.Cut(rest, " ")
				change = [][]byte{[]byte("load"), []byte(name), []byte(strings.ReplaceAll(text, "|", "\n"))}
			} else {
				for _, w := range strings.Split(line, " ") {
					change = append(change, []byte(w))
				}
			}
			before := a.Encode()
			errC := a.Check(change)
			_, errA := a.Apply(change)
			_, errB := b.Apply(change)
			if (errC == nil) != (errA == nil) || (errA == nil) != (errB == nil) {
				t.Fatalf("%q: Check %v, Apply %v and %v", change, errC, errA, errB)
			}
			if errA != nil && !slices.Equal(before, a.Encode()) {
				t.Fatalf("%q was refused (%v) but changed the users", change, errA)
			}
			if !slices.Equal(a.Encode(), b.Encode()) {
				t.Fatalf("after %q the replicas differ", change)
			}
		}
	})
}

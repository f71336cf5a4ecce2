package process

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

// docsRow is one row of a docs' option table: its flags and the default
// cell each has.
type docsRow struct {
	file, line string
	flags      []string
	defaults   []string // one per flag
}

// optionTables are the docs' tables of options ("| flag | default |
// meaning |"), which must match the options table.
var optionTables = []string{"../docs/configuration.md", "../docs/replication.md"}

// elsewhere is the default cell of a row that points to another table, which
// gives the defaults.
const elsewhere = "—"

var flagRE = regexp.MustCompile("`--([a-z0-9-]+)`")

func docsRows(t *testing.T) []docsRow {
	var rows []docsRow
	for _, file := range optionTables {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		inTable := false
		for _, line := range strings.Split(string(text), "\n") {
			if strings.HasPrefix(line, "| flag | default |") {
				inTable = true
				continue
			}
			if !strings.HasPrefix(line, "|") {
				inTable = false
			}
			if !inTable || strings.HasPrefix(line, "|---") {
				continue
			}
			cells := strings.Split(strings.Trim(line, "|"), " | ")
			if len(cells) < 3 {
				t.Fatalf("%s: a row without three cells: %s", file, line)
			}
			r := docsRow{file: file, line: line}
			for _, m := range flagRE.FindAllStringSubmatch(cells[0], -1) {
				r.flags = append(r.flags, m[1])
			}
			def := strings.TrimSpace(cells[1])
			r.defaults = strings.Split(def, ", ")
			if len(r.defaults) != len(r.flags) {
				r.defaults = nil
				for range r.flags {
					r.defaults = append(r.defaults, def)
				}
			}
			rows = append(rows, r)
		}
	}
	if len(rows) < 50 {
		t.Fatalf("found %d rows in the docs' option tables: did their header change?", len(rows))
	}
	return rows
}

// docDefaultMatches reports whether cell, a docs' default, says o's
// default: o.docDefault as it is, or a value o reads as its default
// ("(none)" and "(off)" read as empty, and a trailing "(…)" is a comment).
func docDefaultMatches(o *option, cell string) bool {
	if o.docDefault != "" {
		return cell == o.docDefault
	}
	v := strings.ReplaceAll(cell, "`", "")
	if v == "(none)" || v == "(off)" {
		v = ""
	}
	if i := strings.Index(v, " ("); i > 0 && strings.HasSuffix(v, ")") {
		v = v[:i]
	}
	words := []string{v}
	if o.list {
		words = strings.Fields(v)
	}
	d := defaultConfig()
	c := defaultConfig()
	if o.name == "rename-command" && v == "" {
		return o.get(&d) == ""
	}
	return o.set(&c, words) == nil && o.get(&c) == o.get(&d)
}

// TestDocsOptionTablesMatchTheOptionsTable: every option of the table is in
// the docs' option tables with its default, and every option they document
// exists.
func TestDocsOptionTablesMatchTheOptionsTable(t *testing.T) {
	withDefault := map[string]bool{}
	for _, r := range docsRows(t) {
		for i, name := range r.flags {
			o := findOption(name)
			if o == nil {
				t.Errorf("%s documents --%s, which is not an option:\n%s", r.file, name, r.line)
				continue
			}
			if r.defaults[i] == elsewhere {
				continue
			}
			withDefault[name] = true
			if !docDefaultMatches(o, r.defaults[i]) {
				d := defaultConfig()
				t.Errorf("%s gives --%s the default %q; the options table's is %q (docDefault %q)",
					r.file, name, r.defaults[i], o.get(&d), o.docDefault)
			}
		}
	}
	for _, o := range options {
		if !withDefault[o.name] {
			t.Errorf("--%s is not in the docs' option tables (%s) with its default", o.name, strings.Join(optionTables, ", "))
		}
	}
}

// TestUsageTeachesEveryOption: --help names every option with its default,
// its line of description, and whether CONFIG SET changes it.
func TestUsageTeachesEveryOption(t *testing.T) {
	var b bytes.Buffer
	Usage(&b)
	out := b.String()
	d := defaultConfig()
	for _, o := range options {
		if o.doc == "" {
			t.Errorf("--%s has no description", o.name)
		}
		re := regexp.MustCompile(`(?m)^  --` + regexp.QuoteMeta(o.name) + ` +default "` + regexp.QuoteMeta(o.get(&d)) +
			`"[^\n]*\n      ` + regexp.QuoteMeta(o.doc) + `$`)
		m := re.FindString(out)
		if m == "" {
			t.Errorf("--help lacks --%s with its default and description:\n%s", o.name, out)
			continue
		}
		if live := strings.Contains(strings.SplitN(m, "\n", 2)[0], "CONFIG SET"); live != (o.live != nil) {
			t.Errorf("--help says CONFIG SET changes --%s: %v; the table says %v", o.name, live, o.live != nil)
		}
	}
}

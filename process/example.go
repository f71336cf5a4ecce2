package process

import (
	"fmt"
	"io"
	"strings"
)

// WriteConfig writes c as a config file that documents every option: for
// each row of the options table its one-line description, whether CONFIG
// SET changes it while the server runs, and its directive with c's value.
// A value that depends on the machine (the docs' default is a rule, as
// "2 × GOMAXPROCS") is written commented out with that rule while c keeps
// the default, so that the defaults' file is the same everywhere; a value
// that the file cannot hold is written commented out too. Read back
// (ParseArgs), the file gives c's values. `sluice --print-config` writes
// it, and deploy/sluice.conf is what it writes for the defaults.
func WriteConfig(w io.Writer, c Options) error {
	d := defaultConfig()
	var b strings.Builder
	b.WriteString("# sluice configuration file: redis.conf syntax, one directive per line, the\n" +
		"# directives of `sluice --help` without their \"--\". Flags given after the file\n" +
		"# override it: sluice /etc/sluice/sluice.conf --port 6390\n" +
		"#\n# Written by `sluice --print-config`; every option is listed, at its default\n" +
		"# unless set otherwise.\n")
	for _, o := range options {
		fmt.Fprintf(&b, "\n# %s\n", o.doc)
		if o.live != nil {
			b.WriteString("# CONFIG SET changes it while the server runs.\n")
		}
		v := o.get(&c)
		switch {
		case o.docDefault != "" && v == o.get(&d):
			fmt.Fprintf(&b, "# %s (default: %s)\n", o.name, strings.ReplaceAll(o.docDefault, "`", ""))
		case o.name == "rename-command" && len(c.commands.Renames) == 0:
			b.WriteString("# rename-command FLUSHALL \"\"\n")
		case o.name == "rename-command":
			lines, err := optionLines(&o, &c)
			if err != nil {
				return err
			}
			b.WriteString(strings.Join(lines, "\n") + "\n")
		default:
			line, err := directiveLine(o.name, v)
			if err != nil || !readsBack(o, line, v) {
				fmt.Fprintf(&b, "# %s: %q cannot be written to a config file\n", o.name, v)
				continue
			}
			b.WriteString(line + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// readsBack reports whether the directive line, read as the config file
// reads it, sets o to value.
func readsBack(o option, line, value string) bool {
	words, err := splitWords(line)
	if err != nil || len(words) == 0 {
		return false
	}
	probe := defaultConfig()
	if err := o.set(&probe, words[1:]); err != nil {
		return false
	}
	return o.get(&probe) == value
}

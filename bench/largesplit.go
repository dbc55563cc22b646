package bench

import (
	"fmt"
	"os/exec"
	"regexp"
	"strings"

	"golang.org/x/net/html"
)

// aptGetAvailable says why apt-get cannot be run here (nil when it can).
func aptGetAvailable() error {
	if _, err := exec.LookPath("apt-get"); err != nil {
		return fmt.Errorf("apt-get not found (not a Debian system)")
	}
	return nil
}

// sectioner collects sections: a title and body text, emitted as Docs
// (id rel#n, n counting emitted sections; empty bodies are dropped).
type sectioner struct {
	rel   string
	title string
	body  strings.Builder
	docs  []Doc
}

// flush emits the current section, if it has body text.
func (s *sectioner) flush() {
	body := strings.TrimSpace(blankRuns.ReplaceAllString(s.body.String(), "\n\n"))
	s.body.Reset()
	if body == "" {
		return
	}
	s.docs = append(s.docs, Doc{ID: fmt.Sprintf("%s#%d", s.rel, len(s.docs)+1), Title: s.title, Body: body})
}

// blankRuns are runs of blank lines (collapsed to one).
var blankRuns = regexp.MustCompile(`\n[ \t\n]*\n`)

// htmlSkipped are elements whose text is not part of the document
// (scripts, styles and the navigation around it).
var htmlSkipped = map[string]bool{"script": true, "style": true, "nav": true, "header": true, "footer": true, "noscript": true, "title": false}

// htmlBlocks are elements that end a line of text.
var htmlBlocks = map[string]bool{"p": true, "div": true, "br": true, "li": true, "dt": true, "dd": true, "tr": true, "pre": true, "table": true, "section": true, "blockquote": true, "ul": true, "ol": true, "dl": true}

// splitHTML splits an HTML file on its h1-h6 headings: the text after a
// heading up to the next one is a section titled by the heading's text.
// The text before the first heading is a section titled by the page's
// <title> (or the file name). Scripts, styles, nav, header and footer
// elements are skipped.
func splitHTML(rel, text string) []Doc {
	s := &sectioner{rel: rel, title: baseName(rel)}
	z := html.NewTokenizer(strings.NewReader(text))
	skip, inHeading, inTitle := 0, false, false
	var heading strings.Builder
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			s.flush()
			return s.docs
		case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			tag := string(name)
			start := tt != html.EndTagToken
			switch {
			case htmlSkipped[tag] && tt != html.SelfClosingTagToken:
				skip += map[bool]int{true: 1, false: -1}[start]
				skip = max(skip, 0)
			case tag == "title":
				inTitle = start
			case len(tag) == 2 && tag[0] == 'h' && tag[1] >= '1' && tag[1] <= '6' && skip == 0:
				if start {
					s.flush()
					inHeading = true
					heading.Reset()
				} else if inHeading {
					inHeading = false
					if t := strings.Join(strings.Fields(heading.String()), " "); t != "" {
						s.title = t
					}
				}
			case htmlBlocks[tag]:
				s.body.WriteByte('\n')
			}
		case html.TextToken:
			if skip > 0 {
				continue
			}
			t := sanitize(z.Text())
			switch {
			case inTitle:
				if tt := strings.Join(strings.Fields(t), " "); tt != "" && len(s.docs) == 0 && s.body.Len() == 0 {
					s.title = tt
				}
			case inHeading:
				heading.WriteString(t)
			default:
				s.body.WriteString(t)
			}
		}
	}
}

// podCodes are POD formatting codes (B<, C<<< , L<...): removed, so that
// their letters do not become tokens.
var podCodes = regexp.MustCompile(`\b[A-Z]<(<+ )?`)

// splitPOD splits Perl POD on its =headN commands: the paragraphs after
// one up to the next are a section titled by its text. Other commands are
// dropped (=item keeps its text as a body line); the text before the
// first heading is a section titled by the file name.
func splitPOD(rel, text string) []Doc {
	s := &sectioner{rel: rel, title: baseName(rel)}
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "=") {
			s.body.WriteString(podCodes.ReplaceAllString(line, ""))
			s.body.WriteByte('\n')
			continue
		}
		cmd, arg, _ := strings.Cut(line, " ")
		arg = strings.TrimSpace(podCodes.ReplaceAllString(arg, ""))
		switch {
		case strings.HasPrefix(cmd, "=head"):
			s.flush()
			s.title = arg
		case cmd == "=item":
			s.body.WriteString(arg)
			s.body.WriteByte('\n')
		}
	}
	s.flush()
	return s.docs
}

// baseName is the last element of a slash-separated path.
func baseName(rel string) string {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[i+1:]
	}
	return rel
}

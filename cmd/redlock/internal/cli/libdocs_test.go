package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// libraryPackages are the packages of the library whose documentation
// users read with go doc.
var libraryPackages = []string{
	"github.com/redlock-go/redlock",
	"github.com/redlock-go/redlock/goredis",
	"github.com/redlock-go/redlock/rueidis",
	"github.com/redlock-go/redlock/redlocktest",
}

// What go doc shows of the library names nothing a user cannot see: no
// unexported identifier ("Default defaultTTL") and no source file ("see
// sentinel.go"), outside the package documentation's Architecture
// section, which maps the files for those who read the source.
func TestLibraryDocs_nameNoUnexportedIdentifierNorFile(t *testing.T) {
	file := regexp.MustCompile(`\b[a-z0-9_]+\.go\b`)
	// camelCase words only: an unexported name in one word ("layout")
	// reads as English.
	word := regexp.MustCompile(`\b[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*\b`)
	for _, pkg := range libraryPackages {
		out, err := exec.Command("go", "doc", "-all", pkg).Output()
		if err != nil {
			t.Fatalf("go doc -all %s: %v", pkg, err)
		}
		hidden := unexportedNames(t, pkg)
		for _, line := range docText(string(out)) {
			if f := file.FindString(line); f != "" {
				t.Errorf("%s: the documentation names the file %s: %s", pkg, f, strings.TrimSpace(line))
			}
			for _, w := range word.FindAllString(line, -1) {
				if hidden[w] {
					t.Errorf("%s: the documentation names the unexported %s: %s", pkg, w, strings.TrimSpace(line))
				}
			}
		}
	}
}

// docText returns the lines of prose in the output of go doc -all: the
// package documentation without its Architecture section, then the doc
// comments of the declarations and the comments inside them, without the
// declarations' code.
func docText(doc string) []string {
	var text []string
	inPackage, inArchitecture := true, false
	for _, line := range strings.Split(doc, "\n")[1:] {
		switch {
		case line == "CONSTANTS" || line == "VARIABLES" || line == "FUNCTIONS" || line == "TYPES":
			inPackage = false
		case inPackage && strings.HasPrefix(line, "# "):
			inArchitecture = line == "# Architecture"
		case inPackage:
			if !inArchitecture {
				text = append(text, line)
			}
		case strings.HasPrefix(line, "    "):
			text = append(text, line)
		case strings.Contains(line, "//"):
			text = append(text, line[strings.Index(line, "//"):])
		}
	}
	return text
}

// unexportedNames returns the unexported package-level names of pkg's
// source files, tests left out.
func unexportedNames(t *testing.T, pkg string) map[string]bool {
	t.Helper()
	dir, err := exec.Command("go", "list", "-f", "{{.Dir}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	fset := token.NewFileSet()
	notTest := func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }
	pkgs, err := parser.ParseDir(fset, strings.TrimSpace(string(dir)), notTest, 0)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	add := func(id *ast.Ident) {
		if !id.IsExported() && id.Name != "_" {
			names[id.Name] = true
		}
	}
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if d.Recv == nil {
						add(d.Name)
					}
				case *ast.GenDecl:
					for _, s := range d.Specs {
						switch s := s.(type) {
						case *ast.TypeSpec:
							add(s.Name)
						case *ast.ValueSpec:
							for _, n := range s.Names {
								add(n)
							}
						}
					}
				}
			}
		}
	}
	return names
}

package icongen

import (
	"bytes"
	"flag"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the icons under web/app")

// TestIconsAreCurrent compares each committed icon with the drawing, pixel
// by pixel (PNG bytes may differ between encoders). Run with -update after
// changing the drawing, and look at the result.
func TestIconsAreCurrent(t *testing.T) {
	for _, ic := range Icons() {
		path := filepath.Join("..", "..", "app", ic.Name)
		img := Render(ic)
		if *update {
			var buf bytes.Buffer
			enc := png.Encoder{CompressionLevel: png.BestCompression}
			if err := enc.Encode(&buf, img); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatalf("%v (run go test ./web/internal/icongen -update)", err)
		}
		committed, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", ic.Name, err)
		}
		if committed.Bounds() != img.Bounds() {
			t.Errorf("%s is %v, want %v", ic.Name, committed.Bounds().Size(), img.Bounds().Size())
			continue
		}
		if p, ok := firstDifference(committed, img); ok {
			t.Errorf("%s differs from the drawing at %v (run go test ./web/internal/icongen -update)", ic.Name, p)
		}
	}
}

func firstDifference(a, b image.Image) (image.Point, bool) {
	r := a.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			ar, ag, ab, aa := a.At(x, y).RGBA()
			br, bg, bb, ba := b.At(x, y).RGBA()
			if ar != br || ag != bg || ab != bb || aa != ba {
				return image.Pt(x, y), true
			}
		}
	}
	return image.Point{}, false
}

func TestBadgeIsWhiteOnTransparency(t *testing.T) {
	img := Render(Icon{"b", 72, Badge})
	var opaque int
	for i := 0; i < len(img.Pix); i += 4 {
		r, g, b, a := img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3]
		if a > 0 && (r != 255 || g != 255 || b != 255) {
			t.Fatalf("badge pixel %d is %v, want white", i/4, img.Pix[i:i+4])
		}
		if a == 255 {
			opaque++
		}
	}
	if opaque < 72*72/8 {
		t.Errorf("badge has %d opaque pixels: the glyph is missing", opaque)
	}
}

func TestFullBleedHasNoTransparency(t *testing.T) {
	for _, ic := range Icons() {
		if ic.Style != FullBleed {
			continue
		}
		img := Render(ic)
		for i := 3; i < len(img.Pix); i += 4 {
			if img.Pix[i] != 255 {
				t.Fatalf("%s: pixel %d has alpha %d; platforms crop these icons and show transparency as black", ic.Name, i/4, img.Pix[i])
			}
		}
	}
}

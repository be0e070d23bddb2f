// Package icongen draws amsg's icons: a white speech bubble with an amber
// unread dot on a teal tile. The PNGs under web/app are its output, committed
// so the server needs no image code at run time; the test in this package
// fails when they drift from the drawing and rewrites them with -update.
package icongen

import (
	"image"
	"image/color"
	"math"
)

// Style says how an icon fills its square.
type Style int

const (
	// Tile is a rounded teal square on transparency, for browsers and
	// desktops that show an icon as is.
	Tile Style = iota
	// FullBleed fills the whole square, with the glyph inside the centre 80%
	// circle, for maskable icons and Apple's touch icon (platforms crop it).
	FullBleed
	// Badge is the white glyph alone on transparency: Android draws a
	// notification badge from its alpha channel only.
	Badge
)

// Icon is one file the page serves.
type Icon struct {
	Name  string
	Size  int
	Style Style
}

// Icons lists every icon file, by the name it has under web/app.
func Icons() []Icon {
	return []Icon{
		{"favicon-32x32.png", 32, Tile},
		{"icon-192x192.png", 192, Tile},
		{"icon-512x512.png", 512, Tile},
		{"icon-maskable-512x512.png", 512, FullBleed},
		{"apple-touch-icon.png", 180, FullBleed},
		{"badge-72x72.png", 72, Badge},
	}
}

var (
	tileTop    = rgb(0x14, 0x87, 0x7d)
	tileBottom = rgb(0x0b, 0x5a, 0x53)
	white      = rgb(0xff, 0xff, 0xff)
	amber      = rgb(0xf5, 0x9e, 0x0b)
)

type rgba struct{ r, g, b, a float64 }

func rgb(r, g, b uint8) rgba { return rgba{float64(r), float64(g), float64(b), 255} }

// samples is the supersampling grid per pixel side, for smooth edges.
const samples = 4

// Render draws ic. Every pixel averages samples² points of the scene.
func Render(ic Icon) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, ic.Size, ic.Size))
	n := float64(ic.Size)
	for py := 0; py < ic.Size; py++ {
		for px := 0; px < ic.Size; px++ {
			var sum rgba
			for sy := 0; sy < samples; sy++ {
				for sx := 0; sx < samples; sx++ {
					x := (float64(px) + (float64(sx)+0.5)/samples) / n
					y := (float64(py) + (float64(sy)+0.5)/samples) / n
					c := scene(ic.Style, x, y)
					// Premultiplied, so transparent samples do not darken edges.
					sum.r += c.r * c.a
					sum.g += c.g * c.a
					sum.b += c.b * c.a
					sum.a += c.a
				}
			}
			var out color.NRGBA
			if sum.a > 0 {
				out = color.NRGBA{
					R: clamp(sum.r / sum.a), G: clamp(sum.g / sum.a), B: clamp(sum.b / sum.a),
					A: clamp(sum.a / samples / samples),
				}
			}
			img.SetNRGBA(px, py, out)
		}
	}
	return img
}

func clamp(v float64) uint8 { return uint8(math.Max(0, math.Min(255, math.Round(v)))) }

// scene is the colour at (x, y) in the unit square.
func scene(style Style, x, y float64) rgba {
	// The glyph is drawn in a unit box; each style scales it about the centre.
	scale := map[Style]float64{Tile: 1, FullBleed: 0.86, Badge: 1.22}[style]
	gx, gy := 0.5+(x-0.5)/scale, 0.5+(y-0.5)/scale
	if style == Badge {
		if glyphBubble(gx, gy) || glyphDot(gx, gy) {
			return white
		}
		return rgba{}
	}
	if style == Tile && !roundedRect(x, y, 0.04, 0.04, 0.96, 0.96, 0.22) {
		return rgba{}
	}
	switch {
	case glyphDot(gx, gy):
		return amber
	case glyphBubble(gx, gy):
		return white
	}
	t := (x + y) / 2 // a diagonal gradient, light at the top left
	return rgba{
		tileTop.r + (tileBottom.r-tileTop.r)*t,
		tileTop.g + (tileBottom.g-tileTop.g)*t,
		tileTop.b + (tileBottom.b-tileTop.b)*t,
		255,
	}
}

// The unread dot and the gap that separates it from the bubble.
const dotX, dotY, dotR, gapR = 0.70, 0.30, 0.085, 0.135

func glyphDot(x, y float64) bool { return within(x, y, dotX, dotY, dotR) }

// glyphBubble is a speech bubble with a tail at the lower left and three
// message lines cut out, minus the gap around the dot.
func glyphBubble(x, y float64) bool {
	if within(x, y, dotX, dotY, gapR) {
		return false
	}
	body := roundedRect(x, y, 0.22, 0.30, 0.78, 0.66, 0.11)
	tail := triangle(x, y, 0.30, 0.60, 0.27, 0.79, 0.47, 0.64)
	if !body && !tail {
		return false
	}
	for _, line := range [][2]float64{{0.415, 0.58}, {0.515, 0.50}} {
		if roundedRect(x, y, 0.32, line[0]-0.028, line[1], line[0]+0.028, 0.028) {
			return false
		}
	}
	return true
}

func within(x, y, cx, cy, r float64) bool { return (x-cx)*(x-cx)+(y-cy)*(y-cy) <= r*r }

func roundedRect(x, y, x0, y0, x1, y1, r float64) bool {
	if x < x0 || x > x1 || y < y0 || y > y1 {
		return false
	}
	cx := math.Max(x0+r, math.Min(x, x1-r))
	cy := math.Max(y0+r, math.Min(y, y1-r))
	return within(x, y, cx, cy, r)
}

func triangle(x, y, ax, ay, bx, by, cx, cy float64) bool {
	side := func(px, py, qx, qy float64) float64 { return (qx-px)*(y-py) - (qy-py)*(x-px) }
	d1, d2, d3 := side(ax, ay, bx, by), side(bx, by, cx, cy), side(cx, cy, ax, ay)
	neg := d1 < 0 || d2 < 0 || d3 < 0
	pos := d1 > 0 || d2 > 0 || d3 > 0
	return !(neg && pos)
}

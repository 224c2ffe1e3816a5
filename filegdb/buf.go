package filegdb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unicode/utf16"
)

// cursor reads little-endian values from a byte slice. The first read past
// its end sets err and every later read returns zero, so that a decoder
// checks err once per section instead of after every value.
type cursor struct {
	b   []byte
	pos int
	err error
}

var (
	errShort       = errors.New("cut short: a value runs past its end")
	errVarintLong  = errors.New("a variable-length integer runs over 64 bits (it never ends)")
	errVarintRange = errors.New("a variable-length integer is out of range")
)

func (c *cursor) take(n int) []byte {
	if c.err != nil {
		return nil
	}
	if n < 0 || n > len(c.b)-c.pos {
		c.err = errShort
		return nil
	}
	p := c.b[c.pos : c.pos+n]
	c.pos += n
	return p
}

func (c *cursor) left() int { return len(c.b) - c.pos }

func (c *cursor) u8() byte {
	if p := c.take(1); p != nil {
		return p[0]
	}
	return 0
}

func (c *cursor) u16() uint16 {
	if p := c.take(2); p != nil {
		return binary.LittleEndian.Uint16(p)
	}
	return 0
}

func (c *cursor) u32() uint32 {
	if p := c.take(4); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

func (c *cursor) u64() uint64 {
	if p := c.take(8); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

func (c *cursor) f32() float32 { return math.Float32frombits(c.u32()) }
func (c *cursor) f64() float64 { return math.Float64frombits(c.u64()) }

// varuint reads an unsigned integer of 7-bit groups, low group first, the
// high bit of each byte saying another follows.
func (c *cursor) varuint() uint64 {
	var v uint64
	for shift := 0; ; shift += 7 {
		if c.err != nil {
			return 0
		}
		if shift > 63 {
			c.err = errVarintLong
			return 0
		}
		b := c.u8()
		if c.err != nil {
			return 0
		}
		if shift == 63 && b&0x7E != 0 {
			c.err = errVarintLong
			return 0
		}
		v |= uint64(b&0x7F) << shift
		if b&0x80 == 0 {
			return v
		}
	}
}

// varint reads a signed integer: the first byte holds the sign (0x40) and
// six bits, later bytes seven bits each, as varuint.
func (c *cursor) varint() int64 {
	b := c.u8()
	if c.err != nil {
		return 0
	}
	neg := b&0x40 != 0
	v := uint64(b & 0x3F)
	if b&0x80 != 0 {
		for shift := 6; ; shift += 7 {
			if shift > 62 {
				c.err = errVarintLong
				return 0
			}
			b = c.u8()
			if c.err != nil {
				return 0
			}
			if shift > 55 && uint64(b&0x7F)>>(63-shift) != 0 {
				c.err = errVarintRange
				return 0
			}
			v |= uint64(b&0x7F) << shift
			if b&0x80 == 0 {
				break
			}
		}
	}
	if neg {
		return -int64(v)
	}
	return int64(v)
}

// count reads a varuint that counts things each at least min bytes long
// in what is left, so that a lying count fails before anything is
// allocated for it.
func (c *cursor) count(what string, min int) (int, error) {
	v := c.varuint()
	if c.err != nil {
		return 0, c.err
	}
	if min < 1 {
		min = 1
	}
	if v > uint64(c.left()/min) {
		return 0, fmt.Errorf("claims %d %s, more than its %d remaining bytes can hold", v, what, c.left())
	}
	return int(v), nil
}

// utf16 reads n UTF-16LE code units.
func (c *cursor) utf16(n int) string {
	p := c.take(2 * n)
	if p == nil {
		return ""
	}
	u := make([]uint16, n)
	for i := range u {
		u[i] = binary.LittleEndian.Uint16(p[2*i:])
	}
	return string(utf16.Decode(u))
}

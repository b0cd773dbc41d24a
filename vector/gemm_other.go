//go:build !amd64

package vector

func gemm4x16(x, panel, bias, dst *float32, dim, ldx, ldd int) {
	panic("vector: gemm4x16 without amd64")
}

const haveGemm4x16 = false

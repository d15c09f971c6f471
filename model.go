package mmv

// model is what a registry declares, whichever file each declaration
// lands in: a table per concept, each in the concept's file.
type model struct {
	indomTable
	metricTable
	labelTable
}

func newModel() model {
	return model{
		indomTable:  indomTable{serials: map[uint32]*indom{}},
		metricTable: metricTable{prefixes: map[string]int{}},
	}
}

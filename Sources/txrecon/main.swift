// txrecon: the command line. Argument handling only; behaviour lives in TxRecon.
import TxRecon

"""Limits on what `decode` accepts from untrusted bytes.

Every count and size is checked against these before anything of that size is allocated, and
exceeding one raises ResourceExhausted (not MalformedError: the file may be fine, just bigger than
this loader allows). The defaults admit any realistic model; tighten them for untrusted input.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    max_total_bytes: int = 1 << 30          # the whole file, header included (1 GiB)
    max_constant_bytes: int = 1 << 30       # all constant and const-literal payloads together
    max_constant_elements: int = 1 << 28    # elements of one constant or literal
    max_rank: int = 32                      # dims of any type, constant or literal
    max_strings: int = 1 << 20              # entries in the string table
    max_string_len: int = 1 << 16           # UTF-8 bytes of one string (names, messages)
    max_int_bytes: int = 64                 # bytes of an integer too wide for msgpack (512 bits)
    max_constants: int = 1 << 16            # module constants
    max_functions: int = 1 << 16            # functions in the module
    max_params: int = 1 << 12               # parameters, and result types, of one function
    max_blocks: int = 1 << 16               # blocks of one function
    max_instrs: int = 1 << 20               # instructions of one function, all blocks together
    max_operands: int = 1 << 12             # operands of one instruction
    max_results: int = 1 << 12              # results of one instruction
    max_attrs: int = 64                     # attribute slots of one instruction
    max_list_len: int = 1 << 16             # elements of an int-list or shape attribute
    max_depth: int = 16                     # nesting of msgpack arrays and maps (the format needs 12)

    @property
    def max_array_len(self) -> int:
        """The longest msgpack array any section may hold: msgpack refuses longer ones before
        allocating them."""
        return max(self.max_strings, self.max_constants, self.max_functions, self.max_params,
                   self.max_blocks, self.max_instrs, self.max_operands, self.max_results,
                   self.max_attrs, self.max_list_len, self.max_rank)


DEFAULT_LIMITS = Limits()

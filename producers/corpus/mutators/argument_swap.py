"""argument_swap: two neighbouring positional arguments of a call swapped."""

from __future__ import annotations

import libcst as cst

from producers.corpus.mutators.base import FunctionVisitor, Mutator, ParsedSource, register
from producers.corpus.mutators.cst_helpers import code_of


def _positional(arg: cst.Arg) -> bool:
    return arg.keyword is None and arg.star == ""


class _Sites(FunctionVisitor):
    def visit_Call(self, node: cst.Call) -> None:
        if not self.in_function:
            return
        args = node.args
        for i in range(len(args) - 1):
            left, right = args[i], args[i + 1]
            if not (_positional(left) and _positional(right)):
                continue
            if left.value.deep_equals(right.value):
                continue  # swapping equal arguments changes nothing
            # Swap the values only, so commas and spacing stay where they were.
            new_args = list(args)
            new_args[i] = left.with_changes(value=right.value)
            new_args[i + 1] = right.with_changes(value=left.value)
            self.add(node, node.with_changes(args=new_args),
                     f"`{code_of(left.value)}` <-> `{code_of(right.value)}` in call to "
                     f"`{code_of(node.func)}`")


@register
class ArgumentSwap(Mutator):
    name = "argument_swap"
    base_difficulty = 0.35

    def sites(self, source: ParsedSource):
        return _Sites(source).collect()

import pytest

from schemas.prompt import (
    PROMPT_TEMPLATE_VERSION,
    completion_target,
    extract_code,
    render_prompt,
    render_prompt_text,
    repair_messages,
)

BUGGY = "def add(a, b):\r\n    return a - b\r\n"


def test_template_version_is_pinned():
    assert PROMPT_TEMPLATE_VERSION == "repair-v1"


def test_messages_hold_code_with_normalised_newlines():
    system, user = repair_messages(BUGGY)
    assert system["role"] == "system" and user["role"] == "user"
    assert "```python\ndef add(a, b):\n    return a - b\n```" in user["content"]
    assert "\r" not in user["content"]
    assert "Running the tests printed" not in user["content"]


def test_error_context_is_added_and_cut_to_its_tail():
    error = "Traceback line\n" * 50 + "AssertionError: add(1, 2) == 3"
    _, user = repair_messages(BUGGY, error_context=error, max_error_chars=40)
    assert "Running the tests printed" in user["content"]
    # the last 40 characters: 10 of the final "Traceback line\n" and the 30-character error
    assert "```\n...back line\nAssertionError: add(1, 2) == 3\n```" in user["content"]
    assert "Traceback line" not in user["content"]


def test_prompt_uses_chat_template_and_ends_at_assistant_turn(tokenizer):
    text = render_prompt_text(tokenizer, BUGGY)
    assert text.startswith("<|im_start|>system\nYou repair buggy Python functions.")
    assert text.endswith("<|im_start|>assistant\n")
    ids = render_prompt(tokenizer, BUGGY)
    assert ids == tokenizer(text, add_special_tokens=False)["input_ids"]
    assert ids[0] == tokenizer.convert_tokens_to_ids("<|im_start|>")
    assert tokenizer.decode(ids) == text


def test_extract_fenced_function_drops_prose_and_test_code():
    completion = (
        "Here is the fix:\n```python\nimport math\n\n@cache\ndef f(x):\n    return math.sqrt(x)\n\n"
        "print(f(4))\nassert f(9) == 3\nif __name__ == '__main__':\n    f(1)\n```\nIt works now."
    )
    assert extract_code(completion) == "import math\n\n@cache\ndef f(x):\n    return math.sqrt(x)\n"


def test_extract_keeps_module_constants_and_helpers():
    completion = "```py\nR = 3\nC = 3\ndef g(y):\n    return y * R\n\n\ndef h():\n    return g(C)\n```"
    assert extract_code(completion) == "R = 3\nC = 3\ndef g(y):\n    return y * R\n\n\ndef h():\n    return g(C)\n"


def test_extract_unfenced_and_unclosed_fence():
    assert extract_code("def f():\n    return 1\n\nf()") == "def f():\n    return 1\n"
    assert extract_code("```python\ndef f():\n    return 2\n") == "def f():\n    return 2\n"


def test_extract_returns_unparsable_code_unchanged():
    assert extract_code("```python\ndef f(:\n    return\n```") == "def f(:\n    return\n"


def test_target_round_trips_through_extraction():
    reference = "def add(a, b):\r\n    return a + b"
    assert extract_code(completion_target(reference)) == "def add(a, b):\n    return a + b\n"


@pytest.mark.parametrize("text", ["", "   \n"])
def test_extract_of_empty_completion_is_empty(text):
    assert extract_code(text) == ""


TASK = {"buggy_code": "def inc(x):\n    return x - 1\n", "tests": ["assert inc(2) == 3"],
        "visible_tests": ["assert inc(1) == 2"], "error_context": "expected 2, got 0"}


def test_task_prompt_without_the_context_is_the_bare_repair_prompt():
    from schemas.prompt import task_messages

    assert task_messages(TASK) == repair_messages(TASK["buggy_code"])
    user = task_messages(TASK)[1]["content"]
    assert "inc(1)" not in user and "expected 2, got 0" not in user


def test_task_prompt_with_the_context_shows_the_visible_test_and_its_error_never_a_hidden_test():
    from schemas.prompt import task_messages

    user = task_messages(TASK, include_error_context=True)[1]["content"]
    assert user.startswith(repair_messages(TASK["buggy_code"])[1]["content"])
    assert user.endswith("This test fails:\n```python\nassert inc(1) == 2\n```\n\n"
                         "Running it gives:\n```\nexpected 2, got 0\n```")
    assert "inc(2)" not in user  # the hidden test
    # a task without a visible test (one failing test, or an old record) prompts as without the context
    bare = {"buggy_code": TASK["buggy_code"], "tests": TASK["tests"]}
    assert task_messages(bare, include_error_context=True) == repair_messages(TASK["buggy_code"])
    # the error keeps its tail when it is too long
    long = {**TASK, "error_context": "x" * 100 + "KeyError: 'k'"}
    assert "```\n..." + "x" * 7 + "KeyError: 'k'\n```" in task_messages(long, True, max_error_chars=20)[1]["content"]


def test_render_task_prompt_is_the_chat_template_of_the_task_messages(tokenizer):
    from schemas.prompt import render_task_prompt

    with_context = render_task_prompt(tokenizer, TASK, include_error_context=True)
    assert render_task_prompt(tokenizer, TASK) == render_prompt(tokenizer, TASK["buggy_code"])
    text = tokenizer.decode(with_context)
    assert "This test fails:\n```python\nassert inc(1) == 2\n```" in text
    assert text.endswith("<|im_start|>assistant\n") and len(with_context) > len(render_task_prompt(tokenizer, TASK))

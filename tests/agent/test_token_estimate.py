import math

from agent._token_estimate import chars_per_token, estimate_tokens

CHINESE = "今天我们讨论了新版本的发布计划。首先，开发团队需要在下周五之前完成所有的功能测试。"
ENGLISH = "The quick brown fox jumps over the lazy dog; {\"json\": [1, 2]}\n\tdef f(x): return x * 4 # ok!"


def user(text):
    return {"role": "user", "content": text}


def test_english_and_code_count_four_characters_a_token_as_before():
    for length in range(0, 200):
        text = (ENGLISH * 3)[:length]
        assert estimate_tokens([user(text)]) == math.ceil(length / 4) + 4
    call = {"role": "assistant", "content": None,
            "tool_calls": [{"function": {"name": "read_file", "arguments": '{"path": "notes.txt"}'}}]}
    assert estimate_tokens([user(ENGLISH), call]) == math.ceil((len(ENGLISH) + 9 + 21) / 4) + 8
    assert chars_per_token([user(ENGLISH), call]) == 4.0


def test_chinese_japanese_korean_and_thai_count_a_token_a_character():
    for text in (CHINESE, "昨日の会議では、新しいリリースの計画について話し合いました。", "어제회의에서는새로운계획을논의했습니다",
                 "เมื่อวานนี้เราได้หารือเกี่ยวกับแผน"):
        assert estimate_tokens([user(text * 10)]) == len(text) * 10 + 4
    assert chars_per_token([user(CHINESE)]) == 1.0


def test_other_scripts_count_between_and_mixed_text_adds_up():
    assert estimate_tokens([user("Привет" * 8)]) == 6 * 8 * 5 // 8 + 4  # two UTF-8 bytes: five eighths each
    assert estimate_tokens([user("🎉" * 8)]) == 8 * 3 + 4  # four bytes: three tokens each (an emoji)
    assert estimate_tokens([user("请检查 agent/_compaction.py 里的函数")]) == math.ceil(7 + 22 / 4) + 4  # 7 CJK, 22 ASCII
    parts = [{"type": "text", "text": CHINESE}, {"type": "image_url", "image_url": {"url": "data:,x"}}]
    assert estimate_tokens([user(parts)]) == len(CHINESE) + 512 + 4


def test_a_lone_surrogate_is_counted_not_raised():
    assert estimate_tokens([user("caf\udce9")]) == math.ceil((3 * 2 + 8) / 8) + 4

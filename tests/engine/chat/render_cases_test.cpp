// Rendering semantics, case by case. Every expected string below is what Python's Jinja2 3.1
// renders for the template under Hugging Face's settings (ImmutableSandboxedEnvironment,
// trim_blocks, lstrip_blocks, loopcontrols, HF's tojson/raise_exception/strftime_now) with the
// context in chat_test_util.h; the tables were produced by rendering each template in Python.
#include <gtest/gtest.h>

#include "tests/engine/chat/chat_test_util.h"

namespace cellserve::engine::chat {
namespace {

struct Case {
  const char* source;
  const char* expected;
};

const Case kWhitespace[] = {
    {R"J(a
  {% if true %}
    b
  {% endif %}
c)J",
     R"J(a
    b
c)J"},
    {R"J(a
  {%- if true %}
    b
  {%+ endif %}
c)J",
     R"J(a    b
  c)J"},
    {R"J(a {% if true -%}   b   {%- endif %} c)J", R"J(a b c)J"},
    {R"J({% for i in range(3) %}
  {{ i }}
{% endfor %})J",
     R"J(  0
  1
  2
)J"},
    {R"J(  {{ x }}
  {% set y = 1 %}
  {{ y }})J",
     R"J(  5
  1)J"},
    {R"J(text {# inline #} more
  {# own line #}
end)J",
     R"J(text  more
end)J"},
    {R"J({% raw %}
  {{ not rendered }}
{% endraw %}
after)J",
     R"J(
  {{ not rendered }}
after)J"},
    {R"J(  {% raw -%}   {{ x }}   {%- endraw %}  )J", R"J({{ x }}  )J"},
    {R"J(line1
{%+ if true %}
kept
{% endif +%}
next)J",
     R"J(line1
kept

next)J"},
    {R"J({{- 'a' -}}
  b
{{- 'c' }})J",
     R"J(abc)J"},
    {R"J(x {{- 'y' }})J", R"J(xy)J"},
    {R"J(keep one trailing newline only?
)J",
     R"J(keep one trailing newline only?)J"},
    {R"J(two

)J",
     R"J(two
)J"},
    {"crlf\015\n{% if true %}\015\nyes\015\n{% endif %}\015\n", R"J(crlf
yes
)J"},
    {R"J({% if true %}  x  {% endif %})J", R"J(  x  )J"},
    {R"J(  {# c #}
x)J",
     R"J(x)J"},
    {R"J(a {{ 'b' }} {#- c #}
  d)J",
     R"J(a b  d)J"},
};

const Case kLiterals[] = {
    {R"J({{ 'a\nb' }}|{{ "q\"d" }}|{{ 'tab\tx' }}|{{ '\x41\u00e9\U0001F600' }}|{{ '\q' }})J", R"J(a
b|q"d|tab	x|Aé😀|\q)J"},
    {R"J({{ 'adjacent' ' strings' }})J", R"J(adjacent strings)J"},
    {R"J({{ 1_000 }} {{ 0x1F }} {{ 0o17 }} {{ 0b101 }} {{ 1.5e3 }} {{ 2.5 }} {{ 1e-5 }} {{ 1e16 }} {{ 1e15 }})J",
     R"J(1000 31 15 5 1500.0 2.5 1e-05 1e+16 1000000000000000.0)J"},
    {R"J({{ [1, 'a', none, true, 1.5] }} {{ ('a',) }} {{ (1, 2) }} {{ {'k': [1], 2: none} }})J",
     R"J([1, 'a', None, True, 1.5] ('a',) (1, 2) {'k': [1], 2: None})J"},
    {R"J({{ none }} {{ None }} {{ true }} {{ False }})J", R"J(None None True False)J"},
    {R"J({{ "it's" }} {{ ["it's", 'say "x"', 'both \' "'] }})J", R"J(it's ["it's", 'say "x"', 'both \' "'])J"},
};

const Case kOperators[] = {
    {R"J({{ 7 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ -2 ** 2 }} {{ 2 ** 3 ** 2 }})J",
     R"J(3.5 3 -4 2 -2 1024 0.5 4 64)J"},
    {R"J({{ 0.1 + 0.2 }} {{ 1 / 3 }} {{ 4 / 2 }} {{ 5.5 % 2 }} {{ -5.5 // 2 }} {{ 3 * 1.5 }})J",
     R"J(0.30000000000000004 0.3333333333333333 2.0 1.5 -3.0 4.5)J"},
    {R"J({{ 'ab' * 3 }} {{ 2 * [0] }} {{ [1] + [2] }} {{ (1,) + (2,) }} {{ 'a' + 'b' }} {{ true + 1 }})J",
     R"J(ababab [0, 0] [1, 2] (1, 2) ab 2)J"},
    {R"J({{ 1 ~ 2 + 3 if false else 'precedence' }} {{ 'a' ~ 'b' | upper }} {{ 1 ~ 2 ~ 3 }})J",
     R"J(precedence aB 123)J"},
    {R"J({{ 1 == 1.0 }} {{ true == 1 }} {{ [1, 2] == (1, 2) }} {{ {'a': 1, 'b': 2} == {'b': 2, 'a': 1} }} {{ 'a' != 'b' }})J",
     R"J(True True False True True)J"},
    {R"J({{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'abc' < 'abd' }} {{ [1, 2] < [1, 3] }} {{ 2 >= 2.0 }})J",
     R"J(True False True True True)J"},
    {R"J({{ 'b' in s }} {{ 'z' not in s }} {{ 1 in lst }} {{ 'a' in d }} {{ 'q' in tools[0].args }} {{ 'x' in e }})J",
     R"J(True True True True True False)J"},
    {R"J({{ 0 or 'x' }} {{ 1 and 'y' }} {{ none or [] }} {{ '' and 'never' }} {{ not none }} {{ not 1 == 2 }})J",
     R"J(x y []  True True)J"},
    {R"J({{ 'yes' if x > 3 else 'no' }} {{ 'a' if false else 'b' if false else 'c' }} [{{ 'shown' if false }}])J",
     R"J(yes c [])J"},
    {R"J({{ -x }} {{ +x }} {{ - 3 | abs }} {{ (-3) | abs }})J", R"J(-5 5 3 3)J"},
};

const Case kLoops[] = {
    {R"J({% for m in messages %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }} {% endfor %})J",
     R"J(1032TrueFalse3 2121FalseFalse3 3210FalseTrue3 )J"},
    {R"J({% for m in messages %}[{{ loop.previtem.role if loop.previtem is defined }}|{{ (loop.nextitem or {}).role }}|{{ loop.previtem is defined }}]{% endfor %})J",
     R"J([|user|False][system|assistant|True][user||True])J"},
    {R"J({% for i in range(5) if i is odd %}{{ i }}/{{ loop.length }} {% endfor %})J", R"J(1/2 3/2 )J"},
    {R"J({% for x in [] %}a{% else %}empty{% endfor %})J", R"J(empty)J"},
    {R"J({% for i in [1, 2] %}{% continue %}{% else %}ELSE{% endfor %})J", R"J(ELSE)J"},
    {R"J({% for i in [1, 2] %}{% if i == 2 %}{% break %}{% endif %}{{ i }}{% else %}ELSE{% endfor %})J", R"J(1)J"},
    {R"J({% for i in [1, 2, 3, 4] %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 4 %}{% break %}{% endif %}{{ i }}{% endfor %})J",
     R"J(13)J"},
    {R"J({% for a, b in [[1, 2], [3, 4]] %}{{ a }}{{ b }}{% endfor %}|{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %})J",
     R"J(1234|a=1;b=[1, 2];)J"},
    {R"J({% for k in d %}{{ k }}{% endfor %}{% for c in 'héllo' %}[{{ c }}]{% endfor %})J", R"J(ab[h][é][l][l][o])J"},
    {R"J({% for a in [1, 2] %}{% for b in 'xy' %}{{ a }}{{ b }}{{ loop.index }} {% endfor %}{{ loop.index }}|{% endfor %})J",
     R"J(1x1 1y2 1|2x1 2y2 2|)J"},
    {R"J({% for i in range(4) %}{{ loop.cycle('odd', 'even') }} {% endfor %})J", R"J(odd even odd even )J"},
    {R"J({% for i in [1, 1, 2] %}{{ loop.changed(i) }}{% endfor %})J", R"J(TrueFalseTrue)J"},
    {R"J({% for m in messages[::-1] %}{{ m.role }} {% endfor %})J", R"J(assistant user system )J"},
    {R"J({% for x in undefined_thing %}never{% else %}undefined iterates as empty{% endfor %})J",
     R"J(undefined iterates as empty)J"},
};

const Case kScoping[] = {
    {R"J({% set x = 0 %}{% for i in range(3) %}{{ x }}{% set x = i %}{% endfor %}{{ x }})J", R"J(0000)J"},
    {R"J({% for i in range(3) %}{% if loop.first %}{% set y = 1 %}{% endif %}[{{ y }}]{% endfor %})J", R"J([1][][])J"},
    {R"J({% if true %}{% set z = 3 %}{% endif %}{{ z }})J", R"J(3)J"},
    {R"J({% set ns = namespace(found=false, count=0) %}{% for m in messages %}{% if m.role == 'user' %}{% set ns.found = true %}{% endif %}{% set ns.count = ns.count + 1 %}{% endfor %}{{ ns.found }} {{ ns.count }})J",
     R"J(True 3)J"},
    {R"J({% set ns = namespace() %}{% set ns.a = [1] %}{{ ns.a }} {{ ns }})J", R"J([1] <Namespace {'a': [1]}>)J"},
    {R"J({% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }})J", R"J(12)J"},
    {R"J({% with a = 1, b = 2 %}{{ a + b }}{% set c = 9 %}{% endwith %}[{{ a }}{{ c }}])J", R"J(3[])J"},
    {R"J({% set a, b = 1, 2 %}{{ a }}{{ b }}{% set c = d.a, d.b %}{{ c }})J", R"J(12(1, [1, 2]))J"},
    {R"J({% set t %}block {{ s }}{% endset %}[{{ t }}]{% set u2 | upper %}up {{ s }}{% endset %}{{ u2 }})J",
     R"J([block abc]UP ABC)J"},
    {R"J({% filter upper %}hello {{ s }}{% endfilter %})J", R"J(HELLO ABC)J"},
    {R"J({% set messages = messages[1:] %}{{ messages|length }})J", R"J(2)J"},
};

const Case kMacros[] = {
    {R"J({% macro m(a, b='B') -%}
  [{{ a }}|{{ b }}]
{%- endmacro %}{{ m(1) }}{{ m(1, 2) }}{{ m(b=3, a=4) }})J",
     R"J([1|B][1|2][4|3])J"},
    {R"J({% macro m(a, b=a ~ '!') %}{{ b }}{% endmacro %}{{ m('hi') }})J", R"J(hi!)J"},
    {R"J({% macro m(x) %}[{{ x }}]{% endmacro %}{{ m() }})J", R"J([])J"},
    {R"J({% macro rec(n) %}{% if n > 0 %}{{ n }}{{ rec(n - 1) }}{% endif %}{% endmacro %}{{ rec(5) }})J", R"J(54321)J"},
    {R"J({% macro outer(x) %}{{ inner(x) }}{% endmacro %}{% macro inner(y) %}<{{ y }}>{% endmacro %}{{ outer(5) }})J",
     R"J(<5>)J"},
    {R"J({% macro m() %}{{ v }}{% endmacro %}{% set v = 1 %}{{ m() }}{% set v = 2 %}{{ m() }})J", R"J(12)J"},
    {R"J({% macro m() %}{{ i }}{% endmacro %}{% for i in [7] %}[{{ m() }}]{% endfor %})J", R"J([])J"},
    {R"J({% set v = 1 %}{% macro m() %}{% set v = 5 %}{{ v }}{% endmacro %}{{ m() }}{{ v }})J", R"J(51)J"},
    {R"J({% for m in messages %}{% macro role() %}{{ m.role }}{% endmacro %}{{ role() }} {% endfor %})J",
     R"J(system user assistant )J"},
    {R"J({% macro m(a) %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, y=3) }})J", R"J((2,){'y': 3})J"},
    {R"J({% macro m() %}x{% endmacro %}{{ m() + '<' }} {{ m is callable }})J", R"J(x< True)J"},
    {R"J({% macro json_type(spec) %}{% if spec.type == 'array' %}{{ 'list[' + json_type(spec['items']) + ']' }}{% else %}{{ spec.type }}{% endif %}{% endmacro %}{{ json_type({'type': 'array', 'items': {'type': 'array', 'items': {'type': 'int'}}}) }})J",
     R"J(list[list[int]])J"},
};

const Case kUndefined[] = {
    {R"J([{{ nope }}][{{ nope is defined }}][{{ nope is undefined }}][{{ nope|default('dflt') }}][{{ nope|length }}][{{ nope|list }}])J",
     R"J([][False][True][dflt][0][[]])J"},
    {R"J({{ 'a' in nope }} {{ nope in ['a'] }} {{ nope == nope }} {{ not nope }} {{ nope is none }})J",
     R"J(False False True True False)J"},
    {R"J([{{ nope|upper }}][{{ nope|trim }}][{{ nope|string }}][{{ nope ~ 'x' }}][{{ nope|join(',') }}])J",
     R"J([][][][x][])J"},
    {R"J([{{ d.missing }}][{{ d['missing'] }}][{{ lst[10] }}][{{ s[10] }}][{{ none.attr }}][{{ x.attr }}][{{ d.missing is defined }}])J",
     R"J([][][][][][][False])J"},
    {R"J({{ messages[0].content.content is defined }} {{ messages[0].nothing is defined }})J", R"J(False False)J"},
    {R"J({{ nope is iterable }} {{ nope is sequence }} {{ nope is mapping }} {{ nope is string }})J",
     R"J(True True False False)J"},
    {R"J({{ ('yes' if nope) is defined }})J", R"J(False)J"},
};

const Case kMethods[] = {
    {R"J({{ '  a b  '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ '\n\na\n'.lstrip('\n') }}|{{ 'a  '.rstrip() }}|)J",
     R"J(a b|a|a
|a|)J"},
    {R"J({{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a b c'.rsplit(' ', 1) }} {{ 'a<x>b<x>c'.split('<x>')[-1] }})J",
     R"J(['a', 'b', '', 'c'] ['a', 'b'] ['a', 'b c'] ['a b', 'c'] c)J"},
    {R"J({{ '  a b  c '.split(None, 1) }} {{ '  a b  c '.rsplit(None, 1) }} {{ ' a '.split(None, 0) }} {{ ' a '.rsplit(None, 0) }})J",
     R"J(['a', 'b  c '] ['  a b', 'c'] ['a '] [' a'])J"},
    {R"J({{ 'Hello'.startswith('He') }} {{ 'Hello'.endswith(('x', 'lo')) }} {{ 'héllo'.find('l') }} {{ 'hello'.rfind('l') }} {{ 'hello'.count('l') }} {{ 'hello'.index('e') }})J",
     R"J(True True 2 3 2 1)J"},
    {R"J({{ 'aaa'.replace('a', 'b', 2) }} {{ 'x'.join(['a', 'b']) }} {{ 'abc'.upper() }} {{ 'ABC'.lower() }} {{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }} {{ 'o\'neil 3d'.title() }})J",
     R"J(bba axb ABC abc Hello World Hello O'Neil 3D)J"},
    {R"J({{ 'a\nb\r\nc'.splitlines() }} {{ '12'.isdigit() }} {{ 'ab'.isalpha() }} {{ 'a1'.isalnum() }} {{ ' '.isspace() }} {{ 'ab'.islower() }} {{ 'AB'.isupper() }})J",
     R"J(['a', 'b', 'c'] True True True True True True)J"},
    {R"J({{ '{} and {}'.format('a', 1) }} {{ '{0}{0}{name}'.format('x', name='n') }} {{ '{:>6}|{:<4}|{:^7}|{:.2f}|{:05d}|{:,}'.format('r', 'l', 'c', 3.14159, 42, 1234567) }})J",
     R"J(a and 1 xxn      r|l   |   c   |3.14|00042|1,234,567)J"},
    {R"J({{ 'abc'.center(9) }}|{{ 'abc'.ljust(6) }}|{{ 'abc'.rjust(6, '*') }}|{{ '42'.zfill(5) }}|{{ '-42'.zfill(5) }}|{{ 'pre-x'.removeprefix('pre-') }}|{{ 'a=b=c'.partition('=') }})J",
     R"J(   abc   |abc   |***abc|00042|-0042|x|('a', '=', 'b=c'))J"},
    {R"J({{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 5) }} {{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }})J",
     R"J(1 None 5 ['a', 'b'] [1, [1, 2]] [('a', 1), ('b', [1, 2])])J"},
    {R"J({{ lst.index(1) }} {{ lst.count(3) }} {{ messages[1].get('role') }})J", R"J(1 1 user)J"},
    {R"J({{ 'héllo wörld'.upper() }} {{ 'ÉCOLE straße'.lower() }} {{ 'straße'.upper() }})J",
     R"J(HÉLLO WÖRLD école straße STRASSE)J"},
};

const Case kFilters[] = {
    {R"J([{{ '  x  '|trim }}][{{ 'xxhixx'|trim('x') }}][{{ 5|trim }}][{{ none|trim }}])J", R"J([x][hi][5][None])J"},
    {R"J({{ s|upper }} {{ 'ABC'|lower }} {{ 'hello wORLD-foo'|title }} {{ 'hello WORLD'|capitalize }} {{ 'a-b-c'|replace('-', '+') }} {{ 'a-b-c'|replace('-', '+', 1) }})J",
     R"J(ABC abc Hello World-Foo Hello world a+b+c a+b-c)J"},
    {R"J({{ lst|length }} {{ d|length }} {{ s|count }} {{ u|length }} {{ lst|first }} {{ lst|last }} {{ s|first }} {{ d|first }})J",
     R"J(3 2 3 11 3 2 a a)J"},
    {R"J({{ lst|join(', ') }} {{ [1, none, 'a']|join }} {{ messages|join('|', attribute='role') }})J",
     R"J(3, 1, 2 1Nonea system|user|assistant)J"},
    {R"J({{ lst|sort }} {{ lst|sort(reverse=true) }} {{ ['b', 'A', 'a']|sort }} {{ ['b', 'A', 'a']|sort(case_sensitive=true) }} {{ messages|sort(attribute='role')|map(attribute='role')|list }})J",
     R"J([1, 2, 3] [3, 2, 1] ['A', 'a', 'b'] ['A', 'a', 'b'] ['assistant', 'system', 'user'])J"},
    {R"J({{ ['a', 'A', 'b', 'a']|unique|list }} {{ ['a', 'A']|unique(case_sensitive=true)|list }} {{ lst|reverse|list }} {{ s|reverse }} {{ lst|min }} {{ lst|max }} {{ lst|sum }} {{ [1.5, 2]|sum }})J",
     R"J(['a', 'b'] ['a', 'A'] [2, 1, 3] cba 1 3 6 3.5)J"},
    {R"J({{ messages|map(attribute='role')|list }} {{ ['a', 'b']|map('upper')|list }} {{ [1, 2]|map('string')|join('+') }} {{ messages|map(attribute='missing', default='-')|list }})J",
     R"J(['system', 'user', 'assistant'] ['A', 'B'] 1+2 ['-', '-', '-'])J"},
    {R"J({{ messages|selectattr('role', 'equalto', 'user')|list|length }} {{ messages|rejectattr('role', 'eq', 'user')|map(attribute='role')|list }} {{ lst|select('odd')|list }} {{ lst|reject('>', 1)|list }} {{ [0, 1, '', 'a', none]|select|list }})J",
     R"J(1 ['system', 'assistant'] [3, 1] [1] [1, 'a'])J"},
    {R"J({{ d|items|list }} {{ nope|items|list }} {% for k, v in d|dictsort %}{{ k }}{% endfor %} {{ {'b': 1, 'a': 2}|dictsort }})J",
     R"J([('a', 1), ('b', [1, 2])] [] ab [('a', 2), ('b', 1)])J"},
    {R"J({{ 3.7|int }} {{ '  12 '|int }} {{ '0x1A'|int(base=16) }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ '3.9'|int }} {{ '2'|float }} {{ 'x'|float }} {{ 5|float }})J",
     R"J(3 12 26 0 7 3 2.0 0.0 5.0)J"},
    {R"J({{ 2.5|round }} {{ 3.5|round }} {{ 2.675|round(2) }} {{ 2.5|round(method='ceil') }} {{ 2.5|round(0, 'floor') }} {{ 7|round }} {{ -0.5|round }})J",
     R"J(2.0 4.0 2.67 3.0 2.0 7 -0.0)J"},
    {R"J({{ none|string }} {{ 1.0|string }} {{ lst|string }} {{ x|string + '!' }} {{ -3|abs }} {{ -1.5|abs }})J",
     R"J(None 1.0 [3, 1, 2] 5! 3 1.5)J"},
    {R"J({{ nope|default('D') }} {{ none|default('D') }} {{ ''|default('D', true) }} {{ 0|d('zero', boolean=true) }} {{ s|d('D') }})J",
     R"J(D None D zero abc)J"},
    {R"J({{ '<b>"&\''|escape }} {{ '<b>'|e|e }} {{ ('<'|safe) + '<' }} {{ '<' + ('<'|safe) }} {{ ('<'|safe) ~ '<' }} {{ '<x>'|safe is escaped }})J",
     R"J(&lt;b&gt;&#34;&amp;&#39; &lt;b&gt; <&lt; &lt;< << True)J"},
    {R"J({{ 'one\ntwo'|indent(2) }}|{{ 'one\n\ntwo'|indent(2, true) }}|{{ 'one\n\ntwo'|indent(2, blank=true) }}|{{ 'a\nb'|indent('> ') }})J",
     R"J(one
  two|  one

  two|one
  
  two|a
> b)J"},
    {R"J({{ '%s-%d-%.2f-%5s-%-3s|-%03d-%x-%%'|format('a', 3, 1.234, 'r', 'l', 7, 255) }} {{ '%(a)s/%(b)s'|format(a=1, b=2) }} {{ 'n=%d' % 3 }} {{ '%s and %s' % ('x', 'y') }})J",
     R"J(a-3-1.23-    r-l  |-007-ff-% 1/2 n=3 x and y)J"},
    {R"J({{ 'abc'|center(9) }}|{{ 'a b  c'|wordcount }}|{{ [1, 2, 3, 4, 5]|batch(2)|list }}|{{ [1, 2, 3]|batch(2, 0)|list }})J",
     R"J(   abc   |3|[[1, 2], [3, 4], [5]]|[[1, 2], [3, 0]])J"},
    {R"J({{ d|attr('items') is callable }} {{ d|attr('a') }})J", R"J(True )J"},
};

const Case kToJson[] = {
    {R"J({{ d|tojson }})J", R"J({"a": 1, "b": [1, 2]})J"},
    {R"J({{ d|tojson(indent=2) }})J", R"J({
  "a": 1,
  "b": [
    1,
    2
  ]
})J"},
    {R"J({{ {'k': [1, {'z': none}], 'e': {}, 'l': []}|tojson(indent=4) }})J", R"J({
    "k": [
        1,
        {
            "z": null
        }
    ],
    "e": {},
    "l": []
})J"},
    {R"J({{ d|tojson(separators=(',', ':')) }} {{ d|tojson(indent=1, separators=(', ', ' = ')) }})J",
     R"J({"a":1,"b":[1,2]} {
 "a" = 1, 
 "b" = [
  1, 
  2
 ]
})J"},
    {R"J({{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }} {{ {1: 'x', true: 'y', none: 'z', 1.5: 'w'}|tojson }})J",
     R"J({"a": 2, "b": 1} {"1": "y", "null": "z", "1.5": "w"})J"},
    {R"J({{ u|tojson }} {{ u|tojson(ensure_ascii=true) }} {{ '😀'|tojson(ensure_ascii=true) }} {{ 'q"\\\n\t\x01\x7f\u2028'|tojson }})J",
     "\"héllo wörld\" \"h\\u00e9llo w\\u00f6rld\" \"\\ud83d\\ude00\" \"q\\\"\\\\\\n\\t\\u0001\177 \""},
    {R"J({{ [1.0, -0.0, 1e-7, 1e16, 123456789012, true, none, 'x']|tojson }})J",
     R"J([1.0, -0.0, 1e-07, 1e+16, 123456789012, true, null, "x"])J"},
    {R"J({{ messages[1]|tojson(indent='\t') }})J", R"J({
	"role": "user",
	"content": "Hi"
})J"},
    {R"J({{ tools|tojson }})J", R"J([{"name": "f", "args": {"q": "v"}}])J"},
};

const Case kTests[] = {
    {R"J({{ 1 is number }} {{ true is number }} {{ true is integer }} {{ 1 is integer }} {{ 1.0 is float }} {{ 1.0 is integer }} {{ true is boolean }} {{ 1 is boolean }})J",
     R"J(True True False True True False True False)J"},
    {R"J({{ 'a' is string }} {{ d is mapping }} {{ lst is mapping }} {{ s is iterable }} {{ 1 is iterable }} {{ lst is sequence }} {{ d is sequence }} {{ none is none }})J",
     R"J(True True False True False True True True)J"},
    {R"J({{ 4 is even }} {{ 3 is odd }} {{ 0.5 is odd }} {{ 6 is divisibleby 3 }} {{ 6 is divisibleby(4) }} {{ true is true }} {{ 1 is true }} {{ false is false }} {{ 0 is false }})J",
     R"J(True True False True False True False True False)J"},
    {R"J({{ 'abc' is lower }} {{ 'aBc' is lower }} {{ '12' is lower }} {{ 'AB1' is upper }} {{ 1 is eq 1 }} {{ 1 is ne 1 }} {{ 1 is lt 2 }} {{ 2 is ge 3 }} {{ 2 is gt 1 }} {{ 1 is le 1 }} {{ 'a' is in 'abc' }} {{ 2 is in lst }})J",
     R"J(True False False True True False True False True True True True)J"},
    {R"J({{ lst is sameas lst }} {{ none is sameas none }} {{ 'upper' is filter }} {{ 'nope' is filter }} {{ 'odd' is test }} {{ range is callable }} {{ x is callable }})J",
     R"J(True True True False True True False)J"},
    {R"J({{ x is not none and x is not string }} {{ not x is defined }} {{ s is not mapping }})J",
     R"J(True False True)J"},
};

const Case kBuiltins[] = {
    {R"J({{ range(5)|list }} {{ range(1, 10, 3)|list }} {{ range(5, 0, -2)|list }} {{ range(0)|list }} {{ range(3)|length }})J",
     R"J([0, 1, 2, 3, 4] [1, 4, 7] [5, 3, 1] [] 3)J"},
    {R"J({{ dict(a=1, b=2) }} {{ dict({'x': 1}, y=2)|tojson }})J", R"J({'a': 1, 'b': 2} {"x": 1, "y": 2})J"},
    {R"J({% set j = joiner(' | ') %}{% for i in range(3) %}{{ j() }}{{ i }}{% endfor %})J", R"J(0 | 1 | 2)J"},
    {R"J({{ strftime_now('%Y-%m-%d') }} {{ strftime_now('%d %b %Y') }} {{ strftime_now('%B %d, %Y') }} {{ strftime_now('%H:%M:%S %p %A %j') }})J",
     R"J(2026-01-15 15 Jan 2026 January 15, 2026 09:30:00 AM Thursday 015)J"},
};

template <size_t N>
void expect_renders(const Case (&cases)[N]) {
  for (const Case& c : cases) {
    SCOPED_TRACE(c.source);
    auto out = testing::render(c.source);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    EXPECT_EQ(*out, c.expected);
  }
}

TEST(ChatTemplateRender, WhitespaceControlTrimAndLstripBlocks) { expect_renders(kWhitespace); }
TEST(ChatTemplateRender, Literals) { expect_renders(kLiterals); }
TEST(ChatTemplateRender, OperatorsFollowPython) { expect_renders(kOperators); }
TEST(ChatTemplateRender, LoopVariablesElseAndLoopControls) { expect_renders(kLoops); }
TEST(ChatTemplateRender, ScopingAndNamespace) { expect_renders(kScoping); }
TEST(ChatTemplateRender, Macros) { expect_renders(kMacros); }
TEST(ChatTemplateRender, UndefinedPrintsEmptyAndTestsFalse) { expect_renders(kUndefined); }
TEST(ChatTemplateRender, StringDictAndListMethods) { expect_renders(kMethods); }
TEST(ChatTemplateRender, Filters) { expect_renders(kFilters); }
TEST(ChatTemplateRender, ToJsonIsPythonJsonDumps) { expect_renders(kToJson); }
TEST(ChatTemplateRender, Tests) { expect_renders(kTests); }
TEST(ChatTemplateRender, Builtins) { expect_renders(kBuiltins); }

}  // namespace
}  // namespace cellserve::engine::chat
